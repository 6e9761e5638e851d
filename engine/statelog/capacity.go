package statelog

import (
	"context"
	"fmt"
	"sync"
)

// OrdinaryCeiling is the byte ceiling a log's ordinary appends (writes and
// barriers) are held to under the broker's ceiling max. On a log that
// keeps the gate reserve (the tracker's and the pages') it is a sixteenth
// short of it, the rest kept for gate records so an eviction can still
// unpin a full log; other logs use all of it.
func OrdinaryCeiling(gateReserve bool, max int64) int64 {
	if max <= 0 {
		return 0
	}
	if gateReserve {
		return max - max/16
	}
	return max
}

// msgOverhead approximates what the broker's file store adds to a
// message beyond its subject, headers and body (record header, sequence,
// timestamp, checksum).
const msgOverhead = 64

// storedSize estimates a message's bytes as the broker counts them.
func storedSize(subject, msgID string, data int) uint64 {
	return uint64(msgOverhead + len(subject) + len(msgID) + data)
}

// capacity tracks how full this replica's log is without asking the
// broker on every append: the bytes the broker reported at its last
// answer, plus an estimate of what was delivered since. Only near the
// ordinary ceiling (within an eighth of the broker's ceiling) does an
// append ask the broker first, so the rule is exact where it bites and
// free where it does not.
type capacity struct {
	mu      sync.Mutex
	max     int64  // the broker's ceiling; 0: none
	bytes   uint64 // stored bytes at the last answer
	lastSeq uint64 // the log's end at the last answer
	since   uint64 // estimated bytes delivered after lastSeq
}

func (c *capacity) observe(info LogInfo) {
	c.mu.Lock()
	c.max, c.bytes, c.lastSeq, c.since = info.MaxBytes, info.Bytes, info.LastSeq, 0
	c.mu.Unlock()
}

// delivered counts a message the applier took off the log.
func (c *capacity) delivered(seq uint64, subject, msgID string, data int) {
	c.mu.Lock()
	if seq > c.lastSeq {
		c.since += storedSize(subject, msgID, data)
	}
	c.mu.Unlock()
}

// room refuses an ordinary append of size bytes with ErrLogFull when it
// would take the log past its ordinary ceiling. A broker that cannot be
// asked leaves the append to the broker's own answer.
func (r *Replica) room(ctx context.Context, size uint64) error {
	c := &r.capacity
	c.mu.Lock()
	max, est := c.max, c.bytes+c.since
	c.mu.Unlock()
	limit := OrdinaryCeiling(r.cfg.GateReserve, max)
	if limit <= 0 {
		return nil
	}
	if est+size < uint64(limit-max/8) {
		return nil
	}
	info, err := r.cfg.Log.Info(ctx)
	if err != nil {
		return nil
	}
	c.observe(info)
	limit = OrdinaryCeiling(r.cfg.GateReserve, info.MaxBytes)
	if limit > 0 && info.Bytes+size > uint64(limit) {
		return fmt.Errorf("%w: %d of %d bytes held, an append of about %d would pass the ordinary ceiling of %d (the last sixteenth is kept for gate records)",
			ErrLogFull, info.Bytes, info.MaxBytes, size, limit)
	}
	return nil
}
