package statelog

import (
	"sync/atomic"

	"github.com/crewlet/crewlet/engine/record"
)

// A record's envelope is JSON, and decoding it was a tenth of a drained
// record's time on the applier's goroutine, the one goroutine a drain
// runs on. So a batch of decodeAheadFrom records or more is decoded on a
// goroutine of its own, a few records ahead of the applier, which then
// only takes what is ready: the decoding runs beside the apply instead of
// before it. A smaller batch (a lone write's record) is decoded where it
// is applied, with no hand-off to pay.
const (
	decodeAheadFrom = 16
	// decodeChunk is how many records one ready signal covers: small, so
	// the applier's first record waits for little.
	decodeChunk = 4
)

// decoded is a record's envelope as decoded, or why it would not decode.
type decoded struct {
	rec *record.Record
	err error
}

// decode reads a record as a build reading formats up to format does.
func decode(data []byte, format int) decoded {
	rec, err := record.DecodeUpTo(data, format)
	return decoded{rec: rec, err: err}
}

// decodeAhead is one batch's decoding on its own goroutine.
type decodeAhead struct {
	recs  []decoded
	ready []chan struct{} // one a chunk, closed once the chunk is decoded
	stop  atomic.Bool
	done  chan struct{}
}

// decodeBatch starts decoding batch ahead of the applier, or returns nil
// where the batch is decoded as it is applied.
func decodeBatch(batch []Delivery, format int) *decodeAhead {
	if len(batch) < decodeAheadFrom {
		return nil
	}
	da := &decodeAhead{recs: make([]decoded, len(batch)), ready: make([]chan struct{}, (len(batch)+decodeChunk-1)/decodeChunk),
		done: make(chan struct{})}
	for c := range da.ready {
		da.ready[c] = make(chan struct{})
	}
	go func() {
		defer close(da.done)
		for c := range da.ready {
			if da.stop.Load() {
				return
			}
			for i := c * decodeChunk; i < min(len(batch), (c+1)*decodeChunk); i++ {
				da.recs[i] = decode(batch[i].Data, format)
			}
			close(da.ready[c])
		}
	}()
	return da
}

// at is the i-th record of the batch, decoded (up to format where the
// batch is decoded as it is applied).
func (da *decodeAhead) at(i int, d Delivery, format int) decoded {
	if da == nil {
		return decode(d.Data, format)
	}
	<-da.ready[i/decodeChunk]
	return da.recs[i]
}

// end stops the decoding and waits for its goroutine, which reads the
// batch: the applier's caller may reuse the batch's memory once it
// returns.
func (da *decodeAhead) end() {
	if da == nil {
		return
	}
	da.stop.Store(true)
	<-da.done
}
