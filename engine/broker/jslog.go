package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Log is one domain stream as statelog.Log.
type Log struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	name    string
	domain  engine.Domain
	durable string
	node    string
	log     *slog.Logger
	// drainWait bounds how long closing a reader waits for the broker to
	// confirm its drain: one whose broker is gone never does.
	drainWait time.Duration
	// volume is the embedded broker's store directory, whose volume an
	// append checks for room first (SetVolume); empty for an external
	// broker, whose disk this node cannot see.
	volume string
	// settleWait bounds how long a boot retries the reader's calls while
	// the broker answers nothing (default settleWait).
	settleWait time.Duration
	// comb groups concurrent appends into atomic batches; nil when the
	// stream does not allow atomic publish (see combine.go).
	comb *combiner
	// barrierReads: LastSeq never answers (SetBarrierReads).
	barrierReads atomic.Bool
	// zeroMarks is what SetMarkedZeroWrites chose: marksAlways,
	// marksNever, or zero (marks where the stream is replicated).
	zeroMarks atomic.Int32
	// replicatedAt is when (unix nanoseconds) LastSeq last found the
	// stream replicated: its answer is not asked again for
	// replicatedRecheck, so a linearizable read at three replicas costs
	// its barrier alone, not a stream info request first.
	replicatedAt atomic.Int64
	// ownReader: this node's reader of a replicated stream is one replica
	// on its own broker server (SetOwnReader, place.go).
	ownReader bool
	// replicas is the stream's replica count as the newest stream info
	// answer gave it (the one the log was opened with until one came): an
	// operator may scale a running stream, and the election bound and the
	// reader's placement follow it (replicaCount).
	replicas atomic.Int64
	// local is the standalone embedded broker the stream's state is read
	// from in process (SetLocalServer, localinfo.go); nil asks the API.
	local *server.Server
}

// SetSettleWait sets how long opening the reader retries a broker that
// answers nothing before it gives up (2 minutes when d is 0): a cluster
// restarting members answers nothing for a while.
func (l *Log) SetSettleWait(d time.Duration) {
	if d <= 0 {
		d = settleWait
	}
	l.settleWait = d
}

// DefaultDrainWait is how long closing a reader waits for its drain.
const DefaultDrainWait = 5 * time.Second

// SetDrainWait sets how long closing a reader waits for the broker to
// confirm its drain (DefaultDrainWait when d is 0).
func (l *Log) SetDrainWait(d time.Duration) {
	if d <= 0 {
		d = DefaultDrainWait
	}
	l.drainWait = d
}

var _ statelog.Log = (*Log)(nil)

// NewLog wraps a stream; durable is this node's consumer name.
func NewLog(js jetstream.JetStream, s jetstream.Stream, domain engine.Domain, node string, log *slog.Logger) *Log {
	cfg := s.CachedInfo().Config
	l := &Log{js: js, stream: s, name: cfg.Name, domain: domain, durable: ConsumerName(node), node: node, drainWait: DefaultDrainWait, settleWait: settleWait,
		log: log.With(engine.LogComponent, engine.ComponentEngine, engine.LogStream, cfg.Name)}
	if cfg.AllowAtomicPublish && cfg.Replicas <= 1 {
		// Only at R1, where each single append costs an fsync of its own:
		// a replicated stream's raft log already groups concurrent
		// appends, and batches measured no faster there (BATCHING.md).
		l.comb = newCombiner(js.Conn(), cfg.Name)
	}
	l.replicas.Store(int64(cfg.Replicas))
	return l
}

// replicaCount is the stream's replica count as last answered.
func (l *Log) replicaCount() int { return int(l.replicas.Load()) }

// fullInfo is the client library's whole stream info answer, its replica
// count noted.
func (l *Log) fullInfo(ctx context.Context, opts ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	info, err := l.stream.Info(ctx, opts...)
	if err == nil {
		l.replicas.Store(int64(info.Config.Replicas))
	}
	return info, err
}

// SetSingleAppends makes every append go out alone, never combined.
func (l *Log) SetSingleAppends() { l.comb = nil }

// SetBarrierReads makes LastSeq say it does not know the end (on), so
// every linearizable read appends a barrier, as on a replicated log.
func (l *Log) SetBarrierReads(on bool) { l.barrierReads.Store(on) }

// BatchCounts are what became of the atomic batches a log's appends were
// combined into: taken, refused whole (each member then sent alone), or
// left unanswered (each member's answer lost).
type BatchCounts struct{ Taken, Refused, Lost, Records int64 }

// Batches counts this log's batches (all 0 when its stream does not allow
// them).
func (l *Log) Batches() BatchCounts {
	if l.comb == nil {
		return BatchCounts{}
	}
	return BatchCounts{Taken: l.comb.batches.Load(), Refused: l.comb.refused.Load(), Lost: l.comb.lost.Load(), Records: l.comb.records.Load()}
}

// Stream is the stream's name.
func (l *Log) Stream() string { return l.name }

// Publish appends with the op id and the expected last subject sequence.
func (l *Log) Publish(ctx context.Context, subject string, data []byte, msgID string, expectLast *uint64) (statelog.PubAck, error) {
	if err := l.volumeRoom(len(data)); err != nil {
		return statelog.PubAck{}, err
	}
	if l.comb != nil {
		combine := l.comb.enter()
		defer l.comb.leave()
		if combine {
			if res := l.comb.append(ctx, subject, data, msgID, expectLast); !res.alone {
				return res.ack, l.withVolume(res.err, len(data))
			}
		}
	}
	opts := make([]jetstream.PublishOpt, 0, 3)
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	if expectLast != nil {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(*expectLast))
	}
	return l.publishAlone(ctx, subject, data, opts)
}

// publishAlone makes one append with opts, held to this stream, and
// classifies the broker's answer.
func (l *Log) publishAlone(ctx context.Context, subject string, data []byte, opts []jetstream.PublishOpt) (statelog.PubAck, error) {
	opts = append(opts, jetstream.WithExpectStream(l.name))
	ack, err := l.js.Publish(ctx, subject, data, opts...)
	if errors.Is(err, jetstream.ErrNoStreamResponse) {
		// Every attempt was answered no-responders: the broker delivered
		// the append to nobody, because only a stream's leader listens on
		// its subjects and no leader is reachable from here (a minority,
		// or an election under way). Nothing was stored.
		return statelog.PubAck{}, fmt.Errorf("%w: no leader of %s answers from this broker (%v)", statelog.ErrNoQuorum, l.name, err)
	}
	if err != nil {
		return statelog.PubAck{}, l.withVolume(classify(err), len(data))
	}
	return statelog.PubAck{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// withVolume adds to an append's lost answer that the broker's volume is
// full, where it is: a broker whose store failed for want of disk never
// answers the publish, and the write settles it from the log.
func (l *Log) withVolume(err error, size int) error {
	if errors.Is(err, statelog.ErrNoAnswer) {
		if verr := l.volumeRoom(size); verr != nil {
			err = fmt.Errorf("%w (%w)", err, verr)
		}
	}
	return err
}

// classify turns a broker answer into the framework's errors.
func classify(err error) error {
	var ae *jetstream.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant:
			w := &statelog.WrongSequenceError{}
			if i := strings.LastIndex(ae.Description, ":"); i >= 0 {
				w.Last, _ = strconv.ParseUint(strings.TrimSpace(ae.Description[i+1:]), 10, 64)
			}
			return w
		case 10077: // JSStreamStoreFailedF: "maximum bytes exceeded" under discard new
			if strings.Contains(ae.Description, "maximum bytes") || strings.Contains(ae.Description, "maximum messages") {
				return fmt.Errorf("%w: %s", statelog.ErrLogFull, ae.Description)
			}
		case 10158: // a publish with this id is still in process: indefinite
			return fmt.Errorf("%w: %s", statelog.ErrNoAnswer, ae.Description)
		}
		if ae.Code == 503 && strings.Contains(strings.ToLower(ae.Description), "quorum") {
			return fmt.Errorf("%w: %s", statelog.ErrNoQuorum, ae.Description)
		}
		if ae.Code == 503 {
			// "JetStream system temporarily unavailable": the cluster's
			// meta layer is not up yet (a restart); nothing was decided.
			return fmt.Errorf("%w: %s", statelog.ErrNoAnswer, ae.Description)
		}
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionDraining) {
		return fmt.Errorf("%w: %v", statelog.ErrNoAnswer, err)
	}
	return err
}

func stored(m *jetstream.RawStreamMsg) statelog.StoredMsg {
	return statelog.StoredMsg{Seq: m.Sequence, Subject: m.Subject, MsgID: m.Header.Get(jetstream.MsgIDHeader), Data: m.Data, Time: m.Time}
}

// LastOnSubject returns the newest message on subject.
func (l *Log) LastOnSubject(ctx context.Context, subject string) (statelog.StoredMsg, error) {
	m, err := l.stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return statelog.StoredMsg{}, statelog.ErrNoMessage
		}
		return statelog.StoredMsg{}, classify(err)
	}
	return stored(m), nil
}

// Get returns the message at seq.
func (l *Log) Get(ctx context.Context, seq uint64) (statelog.StoredMsg, error) {
	m, err := l.stream.GetMsg(ctx, seq)
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return statelog.StoredMsg{}, statelog.ErrNoMessage
		}
		return statelog.StoredMsg{}, classify(err)
	}
	return stored(m), nil
}

// Info reads the stream's state from the broker.
func (l *Log) Info(ctx context.Context) (statelog.LogInfo, error) {
	// One request round: a request that reached the cluster while the
	// stream had no leader is never answered, and under a caller's long
	// deadline (a boot's two minutes) it would wait all of it, where
	// asking again finds the leader elected a few seconds later.
	ctx, cancel := context.WithTimeout(ctx, RequestWait)
	defer cancel()
	info, err := l.streamInfoRequest(ctx)
	if err != nil {
		return statelog.LogInfo{}, classify(err)
	}
	// A clustered stream without a leader is answered by a member from its
	// own copy, naming no leader.
	leaderless := info.Cluster != nil && info.Config.Replicas > 1 && info.Cluster.Leader == ""
	leader := ""
	if info.Cluster != nil {
		leader = info.Cluster.Leader
	}
	return statelog.LogInfo{FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq, Bytes: info.State.Bytes,
		MaxBytes: info.Config.MaxBytes, Created: info.Created, Leaderless: leaderless, Leader: leader}, nil
}

var _ statelog.EndReader = (*Log)(nil)

// LastSeq is the stream's last sequence, where the stream has one
// replica: its one server stores every append before acknowledging it
// (under sync always, after its fsync), so an append acknowledged before
// this question is at or below the answer. A replicated stream's answer
// comes from a leader that may already be deposed, so it is not known
// there (ok false: append a barrier). The replicas are read from the
// answer itself, not from when the log was opened: an operator may have
// scaled the stream since.
//
// A stream found replicated is not asked again for replicatedRecheck (a
// stream scaled down to one replica is read by its end from then on); a
// stream scaled up meanwhile says so in the answer itself. A question
// that goes unanswered is ok false with no error: the barrier the caller
// then appends is what says why the log cannot be reached (no quorum on a
// node cut off from its peers, no answer from a broker that is gone).
func (l *Log) LastSeq(ctx context.Context) (uint64, bool, error) {
	if l.barrierReads.Load() {
		return 0, false, nil
	}
	if at := l.replicatedAt.Load(); at != 0 && time.Since(time.Unix(0, at)) < replicatedRecheck {
		return 0, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, RequestWait)
	defer cancel()
	info, err := l.streamInfoRequest(ctx)
	if err != nil {
		return 0, false, nil
	}
	if info.Config.Replicas > 1 {
		l.replicatedAt.Store(time.Now().UnixNano())
		return 0, false, nil
	}
	l.replicatedAt.Store(0)
	return info.State.LastSeq, true, nil
}

// replicatedRecheck is how long a stream found replicated is taken to
// still be (LastSeq).
const replicatedRecheck = 30 * time.Second

// PurgeThrough removes every record at or below seq (the broker's purge
// keeps seq+1 on). Purging through a sequence already purged removes
// nothing, so two nodes trimming to the same floor do no harm, and a
// purge whose answer never came is asked again, in rounds of
// RequestWait, within ctx: sent while the stream elected a leader, one
// request would otherwise hold the trim's whole round.
func (l *Log) PurgeThrough(ctx context.Context, seq uint64) error {
	err := Settle(ctx, settleWait, func(ctx context.Context) error {
		return l.stream.Purge(ctx, jetstream.WithPurgeSequence(seq+1))
	})
	if err != nil {
		return classify(err)
	}
	return nil
}

// SubjectCount is how many messages the stream holds on subject.
func (l *Log) SubjectCount(ctx context.Context, subject string) (uint64, error) {
	info, err := l.fullInfo(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, err
	}
	return info.State.Subjects[subject], nil
}

// Subscribe opens this node's durable consumer so it delivers every
// message after checkpoint, rebuilding it where it disagrees with the rows.
func (l *Log) Subscribe(ctx context.Context, checkpoint uint64) (statelog.Subscription, error) {
	cons, err := l.reader(ctx, checkpoint)
	if err != nil {
		return nil, err
	}
	// Claimed before the first pull, so nothing is in flight while the
	// lead moves; kept claimed for as long as the reader runs.
	// A group still electing answers nothing, so the claim is bounded: the
	// keeper tries again.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if moved, err := l.claimReader(cctx); moved {
		l.awaitReaderLead(cctx)
	} else if err != nil && !errors.Is(err, errNotOurs) {
		l.log.Debug("jetstream_reader_lead_unclaimed", engine.LogDomain, l.domainName(), engine.LogErr, err.Error())
	}
	cancel()
	sub := &subscription{l: l, c: make(chan statelog.Delivery, 4096), done: make(chan struct{}), gone: make(chan error, 1)}
	sub.acked.Store(checkpoint)
	if err := sub.consume(cons); err != nil {
		return nil, err
	}
	go l.keepReader(sub.done)
	go sub.watch()
	return sub, nil
}

// Drift names how a durable reader (its ack floor, the last sequence it
// delivered and how many deliveries await an ack) disagrees with the
// checkpoint, "" when it does not.
//
// firstSeq is the log's first sequence, 0 when it could not be read. The
// broker moves a reader over the records the trim removed, to the first
// one the log still holds, so a node below the floor has a reader past
// its checkpoint that has acknowledged and delivered nothing the node
// has not: records below firstSeq are gone for every reader alike, and
// such a reader stands where one rebuilt at the checkpoint would. Without
// firstSeq the raw positions are judged.
func Drift(ackFloor, delivered uint64, ackPending int, checkpoint, firstSeq uint64) string {
	held := checkpoint
	if firstSeq > 0 && firstSeq-1 > held {
		held = firstSeq - 1
	}
	switch {
	case ackFloor > held:
		return "acknowledged_past_checkpoint"
	case delivered > held:
		return "delivered_past_checkpoint"
	case ackPending > 0:
		return "in_flight_for_a_gone_reader"
	case delivered < checkpoint:
		return "behind_checkpoint"
	}
	return ""
}

// firstSeq reads the log's first sequence for Drift, 0 when it cannot.
func (l *Log) firstSeq(ctx context.Context) (uint64, error) {
	ictx, cancel := context.WithTimeout(ctx, RequestWait)
	defer cancel()
	info, err := l.fullInfo(ictx)
	if err != nil {
		return 0, err
	}
	return info.State.FirstSeq, nil
}

func (l *Log) consumerConfig(checkpoint uint64) jetstream.ConsumerConfig {
	cfg := jetstream.ConsumerConfig{
		Durable:       l.durable,
		AckPolicy:     jetstream.AckAllPolicy,
		AckWait:       30 * time.Second,
		MaxAckPending: 8192,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	if checkpoint > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = checkpoint + 1
	}
	return cfg
}

// reader returns this node's durable consumer positioned at the
// checkpoint. The checkpoint, never the consumer, is where the node
// resumes; a consumer that disagrees is deleted and created again there.
func (l *Log) reader(ctx context.Context, checkpoint uint64) (jetstream.Consumer, error) {
	var cons jetstream.Consumer
	created := false
	err := Settle(ctx, l.settleWait, func(ctx context.Context) error {
		var err error
		cons, err = l.stream.Consumer(ctx, l.durable)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			cons, err = l.createReader(ctx, checkpoint)
			created = err == nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("broker: read consumer %s on %s: %w", l.durable, l.name, err)
	}
	if created {
		return cons, nil // made at the checkpoint just now
	}
	info := cons.CachedInfo()
	first, ferr := l.firstSeq(ctx)
	d := Drift(info.AckFloor.Stream, info.Delivered.Stream, info.NumAckPending, checkpoint, first)
	if d == "" {
		if l.misplaced(ctx, info) {
			return l.replace(ctx, checkpoint, leadOf(info.Cluster).Leader)
		}
		return cons, nil
	}
	attrs := []any{engine.LogDomain, l.domainName(), "drift", d, "checkpoint", checkpoint,
		"ack_floor", info.AckFloor.Stream, "delivered", info.Delivered.Stream, "ack_pending", info.NumAckPending}
	if ferr != nil {
		attrs = append(attrs, "first_seq", "unreadable")
		if d == "acknowledged_past_checkpoint" {
			// Past a trimmed start this could be a node below the floor
			// rather than one whose database is older than its reader.
			attrs = append(attrs, "note", "the log's first sequence was unreadable ("+ferr.Error()+"), so this may be a node below the trim floor rather than a database older than its reader; the reader is rebuilt at the checkpoint either way")
		}
	} else {
		attrs = append(attrs, "first_seq", first)
	}
	rebuilt, err := l.rebuildSettled(ctx, checkpoint)
	if err == nil {
		if d == "acknowledged_past_checkpoint" {
			l.log.Warn(engine.EvConsumerRebuilt, attrs...)
		} else {
			l.log.Info(engine.EvConsumerRebuilt, attrs...)
		}
		return rebuilt, nil
	}
	switch d {
	case "behind_checkpoint", "in_flight_for_a_gone_reader":
		// Neither drift handed over a record past the checkpoint, so the
		// reader the broker still holds loses nothing; the next boot
		// rebuilds it.
		if held, herr := l.stream.Consumer(ctx, l.durable); herr == nil {
			l.log.Warn(engine.EvConsumerRebuildFailed, append(attrs, engine.LogErr, err.Error())...)
			return held, nil
		}
	}
	return nil, fmt.Errorf("broker: the %s reader disagrees with this node's rows (%s) and could not be rebuilt: %w", l.domainName(), d, err)
}

// rebuildSettled rebuilds the reader at checkpoint in rounds of
// RequestWait while the broker answers nothing (Settle).
func (l *Log) rebuildSettled(ctx context.Context, checkpoint uint64) (jetstream.Consumer, error) {
	var c jetstream.Consumer
	err := Settle(ctx, l.settleWait, func(ctx context.Context) error {
		var err error
		c, err = l.rebuild(ctx, checkpoint)
		return err
	})
	return c, err
}

// rebuild deletes the reader and makes it again at checkpoint.
func (l *Log) rebuild(ctx context.Context, checkpoint uint64) (jetstream.Consumer, error) {
	if err := l.stream.DeleteConsumer(ctx, l.durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, err
	}
	return l.createReader(ctx, checkpoint)
}

// replace makes again, on this node's own server, a reader found
// elsewhere (led by from; see misplaced). It agrees with the checkpoint,
// so one made there stands where it stood; where that fails the reader
// the broker then holds is kept, as a reader that delivers, and the next
// boot tries again.
func (l *Log) replace(ctx context.Context, checkpoint uint64, from string) (jetstream.Consumer, error) {
	placed, err := l.rebuildSettled(ctx, checkpoint)
	if err != nil {
		if held, herr := l.stream.Consumer(ctx, l.durable); herr == nil {
			l.log.Warn(engine.EvReaderUnplaced, engine.LogDomain, l.domainName(), "server", l.Server(), "placed_on", from, engine.LogErr, err.Error())
			return held, nil
		}
		return nil, fmt.Errorf("broker: the %s reader on %s could not be made again on this node's server: %w", l.domainName(), from, err)
	}
	lead := ""
	if ci := placed.CachedInfo().Cluster; ci != nil {
		lead = ci.Leader
	}
	l.log.Info(engine.EvReaderPlaced, engine.LogDomain, l.domainName(), "from", from, "to", lead, "checkpoint", checkpoint)
	return placed, nil
}

func (l *Log) domainName() string {
	if l.domain != "" {
		return string(l.domain)
	}
	return l.name
}

// RequestWait bounds one request round to the broker. A request a
// member took while the stream or consumer it names had no leader gets
// no answer at all, so a caller that can wait longer asks again rather
// than waiting on it.
const RequestWait = 5 * time.Second

// settleWait bounds how long a boot waits for a JetStream cluster that is
// still electing its leaders (a restart of several members at once).
const settleWait = 2 * time.Minute

// unanswered says err is the broker not answering (yet): a timeout, no
// responders, or "temporarily unavailable" — an answer that may still
// come, or whose request may have landed unheard.
func unanswered(err error) bool {
	var ae *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) || (errors.As(err, &ae) && ae.Code == 503)
}

// Settle runs f in rounds of RequestWait until it answers something
// other than a timeout or "temporarily unavailable", the wait passes or
// ctx ends: right after members restart, or while a stream or consumer
// elects a leader, a raft group answers nothing for a few seconds. The
// snapshot repository's listing goes through it too.
func Settle(ctx context.Context, wait time.Duration, f func(context.Context) error) error {
	deadline := time.Now().Add(wait)
	for {
		actx, cancel := context.WithTimeout(ctx, RequestWait)
		err := f(actx)
		cancel()
		if !unanswered(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
