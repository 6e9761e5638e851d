package statelog

import (
	"log/slog"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// DefaultProgressEvery is how often a replica catching up with its log
// after it opened (a rebuild on an empty database, a node back from a
// long stop) logs how far it is.
const DefaultProgressEvery = 10 * time.Second

// The replay's progress lines: one every Config.ProgressEvery while the
// applier has not reached the log's end as it stood when the replica
// opened, and one when it has, for a replay that lasted long enough to
// report at all.
const (
	EvReplayProgress = "statelog_replay_progress"
	EvReplayDone     = "statelog_replay_done"
)

// replay follows one catch-up: from the checkpoint the replica opened
// at to the log's end then. Only the applier's goroutine touches it.
type replay struct {
	from, target uint64
	every        time.Duration
	began, said  time.Time
	reported     bool
	over         bool
}

func newReplay(from, target uint64, every time.Duration, now time.Time) *replay {
	if every <= 0 {
		every = DefaultProgressEvery
	}
	return &replay{from: from, target: target, every: every, began: now, said: now, over: target <= from}
}

// after is called with the checkpoint after each committed batch.
func (p *replay) after(log *slog.Logger, stream string, seq uint64, now time.Time) {
	if p.over {
		return
	}
	if seq >= p.target {
		p.over = true
		if p.reported {
			log.Info(EvReplayDone, engine.LogStream, stream, "from", p.from, "through", seq,
				"records", seq-p.from, "took", now.Sub(p.began).Round(time.Millisecond).String())
		}
		return
	}
	if now.Sub(p.said) < p.every {
		return
	}
	p.said, p.reported = now, true
	done := seq - p.from
	rate := float64(done) / now.Sub(p.began).Seconds()
	attrs := []any{engine.LogStream, stream, "seq", seq, "target", p.target, "records_done", done,
		"records_left", p.target - seq, "percent", float64(done) * 100 / float64(p.target-p.from),
		"records_per_second", rate}
	if rate > 0 {
		attrs = append(attrs, "eta_seconds", float64(p.target-seq)/rate)
	}
	log.Info(EvReplayProgress, attrs...)
}
