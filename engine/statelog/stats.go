package statelog

import (
	"sync"
	"time"
)

// Stats are a replica's counters since it opened: what the metrics, the
// status report, the positions register and benchmarks read of it. No
// domain reads them (DomainReplica has none).
type Stats struct {
	// Apply is the longest apply transaction and batch observed.
	Apply ApplyStats
	// Batches and Deliveries count the batches the applier applied and
	// the deliveries they carried (records per transaction).
	Batches, Deliveries uint64
	// Applied counts the records applied: each once, however often the
	// consumer handed it over, and with those read from the log to fill
	// a gap in what it handed over.
	Applied uint64
	// GatheredBatches counts the batches that waited for more records
	// (gather.go).
	GatheredBatches uint64
	// BarrierAppends counts the barrier records this replica appended.
	BarrierAppends uint64
	// EndReads counts the linearizable reads' questions to a one-replica
	// log for its end, asked instead of a barrier (EndReader).
	EndReads uint64
	// AnswersFromApply counts the writes answered with what the applier
	// read for them (Answerer) instead of a read of their own.
	AnswersFromApply uint64
	// Retained is how many records this replica holds undecoded.
	Retained int64
}

// Stats reads the replica's counters.
func (r *Replica) Stats() Stats {
	r.stats.mu.Lock()
	apply := r.stats.s
	r.stats.mu.Unlock()
	return Stats{Apply: apply, Batches: r.batches.Load(), Deliveries: r.delivered.Load(), Applied: r.applied.Load(),
		GatheredBatches: r.gatherer.waits.Load(), BarrierAppends: r.barriers.appends.Load(), EndReads: r.barriers.ends.Load(),
		AnswersFromApply: r.answers.taken.Load(), Retained: r.retained.Load()}
}

// ApplyStats is the longest apply transaction and the longest batch this
// replica has observed since it opened (the retention answer publishes
// them).
type ApplyStats struct {
	LongestTx        time.Duration `json:"longest_tx"`
	LongestTxRecords int           `json:"longest_tx_records"`
	LongestTxRows    int           `json:"longest_tx_rows"`
	LongestBatch     int           `json:"longest_batch_records"`
	LongestBatchRows int           `json:"longest_batch_rows"`
}

type applyStats struct {
	mu sync.Mutex
	s  ApplyStats
}

func (a *applyStats) observe(records, rows int, took time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if took > a.s.LongestTx {
		a.s.LongestTx, a.s.LongestTxRecords, a.s.LongestTxRows = took, records, rows
	}
	if records > a.s.LongestBatch {
		a.s.LongestBatch = records
	}
	if rows > a.s.LongestBatchRows {
		a.s.LongestBatchRows = rows
	}
}
