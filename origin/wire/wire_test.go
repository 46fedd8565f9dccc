package wire

import "testing"

func TestResponseTotalAndReset(t *testing.T) {
	r := Response{Parts: []Part{{Mem: []byte("head")}, {Fd: 3, Off: 10, Len: 100}, {Mem: []byte{}}}, Close: true}
	r.Cursor.Sent = 7
	if got := r.Total(); got != 104 {
		t.Errorf("Total() = %d, want 104", got)
	}
	parts := cap(r.Parts)
	r.Reset()
	if len(r.Parts) != 0 || cap(r.Parts) != parts || r.Close || r.Cursor != (Cursor{}) {
		t.Errorf("Reset left %+v, want empty parts of capacity %d and nothing else", r, parts)
	}
}
