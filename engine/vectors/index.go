package vectors

import (
	"container/heap"
	"context"
	"database/sql"
	"math"
	"math/bits"
	"sync"

	"github.com/crewlet/crewlet/engine/semantic"
	"github.com/crewlet/crewlet/engine/vectors/vecrec"
)

// index is this node's in-memory copy of its vector rows, for the
// nearest-neighbour scan: each vector of the model the node searches
// with, quantised to int8 with a scale of its own (a quarter of the
// float32 memory and of the bytes a scan reads; on unit vectors the
// cosine it answers is within about 1% of the exact one). Every row's
// metadata (any model) is kept for the embedding duty. It is caught up
// from the rows by sequence: the rows put after the last it read, and
// the sources forgotten after it.
type index struct {
	mu      sync.RWMutex
	model   string
	dims    int
	through uint64
	slabs   map[semantic.Kind]*slab
	meta    map[string]meta
}

// meta is what the duty knows of a row without its vector.
type meta struct {
	kind  semantic.Kind
	owner string
	model string
	hash  string
	at    int64
}

// slab holds one kind's vectors contiguously: codes[i*dims:(i+1)*dims]
// is ids[i]'s int8 code, bits[i*words:(i+1)*words] its sign bits.
type slab struct {
	ids    []string
	owners []string
	codes  []int8
	scales []float32
	bits   []uint64
	pos    map[string]int
}

// words is how many uint64s hold a vector's sign bits: a bit a
// component for positive, another for negative, so a zero component (the
// builtin model's vectors are sparse) is neither and two zeros agree
// without a sign in common.
func (x *index) words() int { return 2 * ((x.dims + 63) / 64) }

// signBits sets v's sign bits: positives in the first half of out,
// negatives in the second.
func signBits(v []float32, out []uint64) {
	for i := range out {
		out[i] = 0
	}
	half := len(out) / 2
	for i, f := range v {
		switch {
		case f > 0:
			out[i/64] |= 1 << (i % 64)
		case f < 0:
			out[half+i/64] |= 1 << (i % 64)
		}
	}
}

func newIndex(model string, dims int) *index {
	return &index{model: model, dims: dims, slabs: map[semantic.Kind]*slab{}, meta: map[string]meta{}}
}

// quantize maps a unit vector onto int8 codes and the scale that undoes
// them.
func quantize(v []float32, codes []int8) float32 {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	if m == 0 {
		for i := range codes {
			codes[i] = 0
		}
		return 0
	}
	scale := m / 127
	for i, x := range v {
		codes[i] = int8(math.Round(float64(x / scale)))
	}
	return scale
}

func (x *index) slab(k semantic.Kind) *slab {
	s := x.slabs[k]
	if s == nil {
		s = &slab{pos: map[string]int{}}
		x.slabs[k] = s
	}
	return s
}

// put sets a source's row (called under mu).
func (x *index) put(source string, m meta, vec []float32) {
	x.remove(source)
	x.meta[source] = m
	if m.model != x.model || len(vec) != x.dims {
		return
	}
	s := x.slab(m.kind)
	s.pos[source] = len(s.ids)
	s.ids = append(s.ids, source)
	s.owners = append(s.owners, m.owner)
	start := len(s.codes)
	s.codes = append(s.codes, make([]int8, x.dims)...)
	s.scales = append(s.scales, quantize(vec, s.codes[start:]))
	w := len(s.bits)
	s.bits = append(s.bits, make([]uint64, x.words())...)
	signBits(vec, s.bits[w:])
}

// remove takes a source out (swapping the slab's last entry into its
// place).
func (x *index) remove(source string) {
	m, ok := x.meta[source]
	if !ok {
		return
	}
	delete(x.meta, source)
	s := x.slabs[m.kind]
	if s == nil {
		return
	}
	i, ok := s.pos[source]
	if !ok {
		return
	}
	last := len(s.ids) - 1
	if i != last {
		s.ids[i], s.owners[i], s.scales[i] = s.ids[last], s.owners[last], s.scales[last]
		copy(s.codes[i*x.dims:(i+1)*x.dims], s.codes[last*x.dims:])
		w := x.words()
		copy(s.bits[i*w:(i+1)*w], s.bits[last*w:])
		s.pos[s.ids[i]] = i
	}
	s.ids, s.owners, s.scales, s.codes = s.ids[:last], s.owners[:last], s.scales[:last], s.codes[:last*x.dims]
	s.bits = s.bits[:last*x.words()]
	delete(s.pos, source)
}

// catchUp reads the rows put and the sources forgotten after the last
// sequence it read, inside tx (one snapshot).
func (x *index) catchUp(ctx context.Context, tx *sql.Tx) error {
	x.mu.RLock()
	since := x.through
	x.mu.RUnlock()
	rows, err := tx.QueryContext(ctx, `SELECT source, kind, owner, model, dims, vec, text_hash, seq, at FROM vectors WHERE seq > ? ORDER BY seq`, since)
	if err != nil {
		return err
	}
	type row struct {
		source string
		m      meta
		vec    []float32
		seq    uint64
	}
	var got []row
	for rows.Next() {
		var r row
		var kind string
		var dims int
		var blob []byte
		if err := rows.Scan(&r.source, &kind, &r.m.owner, &r.m.model, &dims, &blob, &r.m.hash, &r.seq, &r.m.at); err != nil {
			rows.Close()
			return err
		}
		r.m.kind = semantic.Kind(kind)
		r.vec, _ = vecrec.BlobVector(blob, dims)
		got = append(got, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	type gone struct {
		source string
		seq    uint64
	}
	var forgotten []gone
	frows, err := tx.QueryContext(ctx, `SELECT source, seq FROM vectors_forgotten WHERE seq > ? ORDER BY seq`, since)
	if err != nil {
		return err
	}
	for frows.Next() {
		var g gone
		if err := frows.Scan(&g.source, &g.seq); err != nil {
			frows.Close()
			return err
		}
		forgotten = append(forgotten, g)
	}
	frows.Close()
	if err := frows.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.through != since {
		return nil // another catch-up got there first, from a snapshot at least as new
	}
	for _, r := range got {
		x.put(r.source, r.m, r.vec)
		x.through = max(x.through, r.seq)
	}
	for _, g := range forgotten {
		x.remove(g.source)
		x.through = max(x.through, g.seq)
	}
	return nil
}

// hit is a scan's candidate.
type hit struct {
	i     int
	score float32
}

// hits is a min-heap of the best candidates so far.
type hits []hit

func (h hits) Len() int { return len(h) }
func (h hits) Less(i, j int) bool {
	return h[i].score < h[j].score || h[i].score == h[j].score && h[i].i > h[j].i
}
func (h hits) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *hits) Push(v any)   { *h = append(*h, v.(hit)) }
func (h *hits) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// nearest answers the k sources of kinds nearest to q, best first. A
// large slab is searched in two passes: the Hamming distance of the sign
// bits (twelve XOR-and-popcounts a 384-dimension vector) picks the
// candidates, and the int8 dot product ranks them; a small one is ranked
// whole by the dot product.
func (x *index) nearest(q []float32, kinds []semantic.Kind, k int) []semantic.Hit {
	if len(q) != x.dims || k <= 0 {
		return nil
	}
	qc := make([]int8, x.dims)
	qs := quantize(q, qc)
	qb := make([]uint64, x.words())
	signBits(q, qb)
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []semantic.Hit
	for _, kind := range kinds {
		s := x.slabs[kind]
		if s == nil {
			continue
		}
		h := make(hits, 0, k)
		rank := func(i int) {
			c := s.codes[i*x.dims : (i+1)*x.dims]
			var dot int32
			for j, a := range qc {
				dot += int32(a) * int32(c[j])
			}
			// The query's own scale is common to all and comes after.
			score := float32(dot) * s.scales[i]
			if len(h) < k {
				heap.Push(&h, hit{i, score})
			} else if score > h[0].score {
				h[0] = hit{i, score}
				heap.Fix(&h, 0)
			}
		}
		if c := candidates(k); len(s.ids) > 2*c {
			for _, i := range x.closestBits(s, qb, c) {
				rank(i)
			}
		} else {
			for i := range s.ids {
				rank(i)
			}
		}
		for _, c := range h {
			out = append(out, semantic.Hit{ID: s.ids[c.i], Kind: kind, Owner: s.owners[c.i], Similarity: float64(c.score * qs)})
		}
	}
	sortHits(out)
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// candidates is how many sign-bit neighbours are ranked for k answers.
func candidates(k int) int { return max(16*k, 2048) }

// closestBits answers the (about) c entries whose sign bits are nearest
// to qb by Hamming distance: a counting pass over the distances (at most
// 2·dims+1 of them), then every entry up to the distance that reaches c.
func (x *index) closestBits(s *slab, qb []uint64, c int) []int {
	w := len(qb)
	n := len(s.ids)
	dist := make([]uint16, n)
	counts := make([]int, 2*x.dims+2)
	for i := 0; i < n; i++ {
		b := s.bits[i*w : (i+1)*w]
		d := 0
		for j, q := range qb {
			d += bits.OnesCount64(q ^ b[j])
		}
		dist[i] = uint16(d)
		counts[d]++
	}
	cut, total := 0, 0
	for cut < len(counts) && total+counts[cut] <= c {
		total += counts[cut]
		cut++
	}
	out := make([]int, 0, total+1)
	for i, d := range dist {
		if int(d) < cut {
			out = append(out, i)
		}
	}
	return out
}

// count is how many sources of kind have a vector of the index's model.
func (x *index) count(kind semantic.Kind) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if s := x.slabs[kind]; s != nil {
		return len(s.ids)
	}
	return 0
}
