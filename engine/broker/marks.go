package broker

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/statelog"
)

var _ statelog.MarkingLog = (*Log)(nil)

// MarksZeroWrites says whether a write at an expectation of zero rides a
// creation mark (statelog.MarkingLog) rather than ask the stream's
// creation instant first: where the stream is replicated, that question
// is a request answered by the stream's leader, 165–454 µs of a
// create's wait and 228–598 µs of the brokers' CPU at three replicas
// (BenchmarkZeroCheck). At one replica the instant is read from the
// server in process (about 11 µs, SetLocalServer), and the combiner
// batches appends held to their own subjects, so there a write at zero
// asks, unless SetMarkedZeroWrites says otherwise.
func (l *Log) MarksZeroWrites() bool {
	switch l.zeroMarks.Load() {
	case marksAlways:
		return true
	case marksNever:
		return false
	}
	return l.replicaCount() > 1
}

// What SetMarkedZeroWrites chose (zero: by the replica count).
const (
	marksAlways = 1
	marksNever  = 2
)

// SetMarkedZeroWrites makes writes at zero ride creation marks at one
// replica too (on), as they do on a replicated stream: the tests of the
// mark's path run on a node of one. Off makes them ask the creation
// instant even on a replicated stream, for benchmarks comparing the two.
func (l *Log) SetMarkedZeroWrites(on bool) {
	if on {
		l.zeroMarks.Store(marksAlways)
	} else {
		l.zeroMarks.Store(marksNever)
	}
}

// PublishOnMark appends data on subject under msgID, held to markSeq
// being the last sequence on markSubject
// (Nats-Expected-Last-Subject-Sequence-Subject) rather than to anything
// on its own subject. It goes out alone, never combined: an atomic batch
// carries its own subjects' expectations. Errors are Publish's.
func (l *Log) PublishOnMark(ctx context.Context, subject string, data []byte, msgID, markSubject string, markSeq uint64) (statelog.PubAck, error) {
	if err := l.volumeRoom(len(data)); err != nil {
		return statelog.PubAck{}, err
	}
	opts := make([]jetstream.PublishOpt, 0, 3)
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	opts = append(opts, jetstream.WithExpectLastSequenceForSubject(markSeq, markSubject))
	return l.publishAlone(ctx, subject, data, opts)
}
