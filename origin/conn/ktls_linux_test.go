package conn

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"segorigin/origin/ktls"
)

// TestAlertCmsg: close_notify goes out with one SOL_TLS control message,
// TLS_SET_RECORD_TYPE, whose data is the alert record type.
func TestAlertCmsg(t *testing.T) {
	msgs, err := unix.ParseSocketControlMessage(recordTypeCmsg(ktls.RecordAlert))
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

// TestKTLSLoadModuleLine: when the start-up probe finds the tls module
// missing, NewTLS logs exactly one line saying how to load it (now and at
// boot) and whether this process could have had the kernel load it;
// when the module is there, or kTLS is off, it logs no such line.
func TestKTLSLoadModuleLine(t *testing.T) {
	for _, mode := range []KTLSMode{KTLSAuto, KTLSAlways, KTLSOff} {
		t.Run(string(mode), func(t *testing.T) {
			var buf bytes.Buffer
			st, err := NewTLS(TLSParams{Config: TLSConfig{Dev: true, KTLS: mode}, Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
			if err != nil {
				t.Fatal(err)
			}
			var lines []map[string]any
			for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("log line %q: %v", l, err)
				}
				if msg, _ := m["msg"].(string); strings.Contains(msg, "tls module is not loaded") {
					lines = append(lines, m)
				}
			}
			want := 0
			if mode != KTLSOff && !ulpListed() {
				want = 1
			}
			if st.probe.noModule != (want == 1) {
				t.Errorf("probe.noModule = %v with %s listing tls = %v", st.probe.noModule, ulpList, ulpListed())
			}
			if len(lines) != want {
				t.Fatalf("%d lines saying the module is not loaded, want %d:\n%s", len(lines), want, buf.String())
			}
			if want == 0 {
				return
			}
			msg := lines[0]["msg"].(string)
			for _, s := range []string{"modprobe tls", "/etc/modules-load.d/"} {
				if !strings.Contains(msg, s) {
					t.Errorf("line %q does not say %q", msg, s)
				}
			}
			if got := lines[0]["cap_net_admin"]; got != hasNetAdmin() {
				t.Errorf("cap_net_admin = %v, want %v", got, hasNetAdmin())
			}
		})
	}
}

// TestHasNetAdmin agrees with CapEff in /proc/self/status.
func TestHasNetAdmin(t *testing.T) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("CapEff %q: %v", v, err)
			}
			if want := eff&(1<<unix.CAP_NET_ADMIN) != 0; hasNetAdmin() != want {
				t.Errorf("hasNetAdmin() = %v, CapEff %s says %v", hasNetAdmin(), strings.TrimSpace(v), want)
			}
			return
		}
	}
	t.Fatal("/proc/self/status has no CapEff line")
}
