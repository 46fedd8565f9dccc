package origin

import (
	"strings"
	"testing"
)

// FuzzParseMediaTypeRule: whatever -mime is given, a rule that parses is
// valid, names one extension, a media type that is a single header-safe
// value and one of the kinds; written back in the flag's form it parses to
// itself.
func FuzzParseMediaTypeRule(f *testing.F) {
	for _, s := range []string{
		".cmfv=video/mp4:segment", ".sub=text/plain; charset=utf-8:other", ".x=a/b", ".JSON=application/json:playlist",
		"cmfv=video/mp4", ".=a/b", ".a.b=a/b", ".x=video", ".x=a/b:forever", ".x=a/b\r\nX: y", " .x = a/b : other ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseMediaTypeRule(s)
		if err != nil {
			return
		}
		if err := r.validate(); err != nil {
			t.Fatalf("ParseMediaTypeRule(%q) = %+v, which does not validate: %v", s, r, err)
		}
		if r.Ext == "" || strings.ContainsAny(r.Ext, "./\\ \t=") {
			t.Fatalf("ParseMediaTypeRule(%q): extension %q", s, r.Ext)
		}
		if strings.ContainsFunc(r.ContentType, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			t.Fatalf("ParseMediaTypeRule(%q): content type %q holds a control byte", s, r.ContentType)
		}
		form := "." + r.Ext + "=" + r.ContentType
		if r.Kind != "" {
			form += ":" + r.Kind
		}
		if again, err := ParseMediaTypeRule(form); err != nil || again != r {
			t.Fatalf("ParseMediaTypeRule(%q) = %+v; its form %q parses to %+v, %v", s, r, form, again, err)
		}
		if mt := mediaTypeTable([]MediaTypeRule{r})[strings.ToLower(r.Ext)]; mt.contentType != r.ContentType {
			t.Fatalf("table for %+v: %q, want %q", r, mt.contentType, r.ContentType)
		}
	})
}
