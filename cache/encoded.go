package cache

// Encoded is a content coding of a Handle's bytes (a gzip of them) that
// the caller made and keeps with the entry, so a small text file is
// compressed once per version of the file rather than once per request,
// and the result goes exactly when the descriptor goes (eviction,
// invalidation, revalidation, shedding, Close), like the inline bytes.
type Encoded struct {
	// Bytes is the encoded body; nil when the caller found the coding not
	// worth sending (no smaller than the file), which is remembered too.
	Bytes []byte
}

// Encoded returns the coding SetEncoded kept with this Handle, or nil.
func (h *Handle) Encoded() *Encoded { return h.encoded.Load() }

// SetEncoded keeps e with this Handle (every holder of the same Handle
// sees it), its bytes counted against Config.InlineBudget beside the
// inlined files' (Stats.InlineBytes). It reports false, keeping nothing,
// when the budget has no room or the Handle already has one (the first
// stays). The caller made e from this Handle's bytes and holds a
// reference, so the Handle cannot close meanwhile.
func (h *Handle) SetEncoded(e *Encoded) bool {
	n := int64(len(e.Bytes))
	if h.owner == nil || !addWithin(&h.owner.stats.inlineBytes, n, h.owner.inlineBudget) {
		return false
	}
	if !h.encoded.CompareAndSwap(nil, e) {
		h.owner.stats.inlineBytes.Add(-n)
		return false
	}
	return true
}

// dropEncoded gives an Encoded's bytes back to the budget when the Handle
// closes.
func (h *Handle) dropEncoded() {
	if e := h.encoded.Load(); e != nil {
		h.owner.stats.inlineBytes.Add(-int64(len(e.Bytes)))
	}
}
