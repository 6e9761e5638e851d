package statelog

import "sync"

// landedSize is how many of the newest applied operations landedNotes
// keeps: many times the writes a node has waiting at once.
const landedSize = 4096

// landedNotes remembers, for the newest operations this node applied,
// the sequence each one's ledger row names, noted once their transaction
// committed. A write waiting for its own record reads its answer here
// instead of asking the ledger again; an operation the notes no longer
// hold (or never held: a gate dropped it, a second copy applied nothing)
// is asked of the ledger as before, so the notes only ever save a query.
type landedNotes struct {
	mu    sync.Mutex
	bySeq map[uint64]string
	ring  [landedSize]uint64
	next  int
	// batch is what the transaction in progress applied; the applier's
	// goroutine alone touches it.
	batch []landedOp
}

type landedOp struct {
	seq  uint64
	opID string
}

// note records that the transaction in progress wrote op's ledger row at seq.
func (n *landedNotes) note(seq uint64, opID string) {
	n.batch = append(n.batch, landedOp{seq, opID})
}

// reset forgets what an earlier try of the batch noted.
func (n *landedNotes) reset() { n.batch = n.batch[:0] }

// commit keeps what the committed transaction noted, dropping the oldest.
func (n *landedNotes) commit() {
	if len(n.batch) == 0 {
		return
	}
	n.mu.Lock()
	if n.bySeq == nil {
		n.bySeq = make(map[uint64]string, landedSize)
	}
	for _, o := range n.batch {
		if old := n.ring[n.next]; old != 0 {
			delete(n.bySeq, old)
		}
		n.ring[n.next] = o.seq
		n.next = (n.next + 1) % landedSize
		n.bySeq[o.seq] = o.opID
	}
	n.mu.Unlock()
	n.batch = n.batch[:0]
}

// applied reports whether op's ledger row was written at seq by a
// transaction that committed.
func (n *landedNotes) applied(seq uint64, opID string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	got, ok := n.bySeq[seq]
	return ok && got == opID
}

// forget drops every note: the rows were replaced under the replica.
func (n *landedNotes) forget() {
	n.mu.Lock()
	n.bySeq, n.ring, n.next = nil, [landedSize]uint64{}, 0
	n.mu.Unlock()
}
