//go:build !linux

package conn

import (
	"errors"

	"segorigin/origin/clientaddr"
)

func (c *TCP) peekProxy([]byte) (clientaddr.ProxyHeader, int, error) {
	return clientaddr.ProxyHeader{}, 0, errors.New("conn: PROXY protocol needs MSG_PEEK (Linux only)")
}
