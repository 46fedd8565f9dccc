//go:build !linux

package stream

// peerWatch: only Linux parks until the client leaves (peer_linux.go).
type peerWatch struct{}

func (*peerWatch) stop() {}

func watchPeer(*Conn)   {}
func unwatchPeer(*Conn) {}
