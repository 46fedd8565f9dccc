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

// TestResponseNext: Next passes More's word on and, when More gave new
// parts, puts the cursor at their start, keeping the count of bytes sent.
func TestResponseNext(t *testing.T) {
	var r Response
	if more, ok := r.Next(); more || !ok {
		t.Errorf("without More: Next() = %v, %v, want complete", more, ok)
	}
	calls := 0
	r.More = func(r *Response) (bool, bool) {
		calls++
		switch calls {
		case 1:
			return false, false // not yet
		case 2:
			r.Parts = append(r.Parts[:0], Part{Mem: []byte("3\r\n")}, Part{Fd: 3, Len: 3}, Part{Mem: []byte("\r\n")})
			return true, true
		}
		return false, true
	}
	r.Parts = []Part{{Mem: []byte("head")}}
	r.Cursor = Cursor{Part: 1, Off: 0, ReadyUntil: 9, Sent: 4, Started: true}
	if more, ok := r.Next(); more || ok || r.Cursor.Part != 1 {
		t.Errorf("not yet: Next() = %v, %v, cursor %+v; want not yet, the cursor kept", more, ok, r.Cursor)
	}
	if more, ok := r.Next(); !more || !ok || r.Cursor != (Cursor{Sent: 4, Started: true}) || len(r.Parts) != 3 {
		t.Errorf("more: Next() = %v, %v, cursor %+v, %d parts; want more, the cursor at the first of 3", more, ok, r.Cursor, len(r.Parts))
	}
	if more, ok := r.Next(); more || !ok {
		t.Errorf("complete: Next() = %v, %v", more, ok)
	}
}
