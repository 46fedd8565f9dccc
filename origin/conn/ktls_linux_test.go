package conn

import (
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"segorigin/origin/ktls"
)

// TestAlertCmsg: close_notify goes out with one SOL_TLS control message,
// TLS_SET_RECORD_TYPE, whose data is the alert record type.
func TestAlertCmsg(t *testing.T) {
	msgs, err := unix.ParseSocketControlMessage(alertCmsg())
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Fatalf("%d control messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.Header.Level != unix.SOL_TLS || m.Header.Type != ktls.CmsgSetRecordType || len(m.Data) != 1 || m.Data[0] != ktls.RecordAlert {
		t.Errorf("cmsg level %d type %d data %v, want %d %d [21]", m.Header.Level, m.Header.Type, m.Data, unix.SOL_TLS, ktls.CmsgSetRecordType)
	}
}

// TestProbeKTLS: the probe's verdict agrees with what the kernel lists in
// /proc/sys/net/ipv4/tcp_available_ulp (read after the probe, which may
// have loaded the tls module), and a refusal names the errno and the list.
func TestProbeKTLS(t *testing.T) {
	p := probeKTLS()
	t.Logf("probe: ok=%v ciphers=%v reason=%q", p.ok, p.ciphers, p.reason)
	if p.ok {
		if len(p.ciphers) == 0 || p.reason != "" {
			t.Errorf("ok with ciphers %v, reason %q", p.ciphers, p.reason)
		}
	} else if len(p.ciphers) != 0 || p.reason == "" {
		t.Errorf("not ok with ciphers %v, reason %q", p.ciphers, p.reason)
	}
	b, err := os.ReadFile(ulpList)
	if err != nil {
		t.Skipf("cannot compare with the kernel's list: %v", err)
	}
	listed := slices.Contains(strings.Fields(string(b)), "tls")
	t.Logf("%s: %q", ulpList, strings.TrimSpace(string(b)))
	if p.ok != listed {
		t.Fatalf("probe ok=%v, but %s lists tls=%v (%q)", p.ok, ulpList, listed, strings.TrimSpace(string(b)))
	}
	if !listed {
		// The ULP is not registered: setsockopt(TCP_ULP, "tls") gets ENOENT.
		for _, want := range []string{"ENOENT", ulpList + " lacks tls"} {
			if !strings.Contains(p.reason, want) {
				t.Errorf("reason %q does not say %q", p.reason, want)
			}
		}
	}
}
