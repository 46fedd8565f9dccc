package token

import (
	"testing"
	"time"
)

func BenchmarkVerify(b *testing.B) {
	v := testVerifier(b, key1, key2)
	master := "/vod/title42/1080p/seg-00042.m4s"
	noKid := mustSign(b, key2, Claims{Start: t0, Expiry: tExp, ACL: []string{"/live/*", "/vod/title42/*"}, IP: "192.0.2.1"})
	seg := PathSegment(opensslToken)
	run := func(name string, verify func() error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := verify(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	run("kid", func() error { return v.Verify(opensslToken, master, "", t0) })
	run("segment", func() error { return v.VerifySegment(seg, master, "", t0) })
	run("no-kid-second-key-ip", func() error { return v.Verify(noKid, master, "192.0.2.1", t0) })
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := v.Verify(opensslToken, master, "", t0); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func BenchmarkSecureLinkVerify(b *testing.B) {
	s := mustSecureLink(b, documented)
	r := linkReq(s, "md5="+nginxHash+"&expires=2147483647", "/s/link", "127.0.0.1", "")
	now := time.Unix(1700000000, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Verify(r, now); err != nil {
			b.Fatal(err)
		}
	}
}
