package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
)

// Lead names the broker server that leads a replicated stream or consumer
// and since when; Leader is empty while the group elects one (or on a
// broker that runs no groups, where Since is zero too).
type Lead struct {
	Leader string
	Since  time.Time
}

func leadOf(ci *jetstream.ClusterInfo) Lead {
	if ci == nil {
		return Lead{}
	}
	out := Lead{Leader: ci.Leader}
	if ci.LeaderSince != nil {
		out.Since = *ci.LeaderSince
	}
	return out
}

// StreamLead is who leads this log's stream.
func (l *Log) StreamLead(ctx context.Context) (Lead, error) {
	info, err := l.fullInfo(ctx)
	if err != nil {
		return Lead{}, classify(err)
	}
	return leadOf(info.Cluster), nil
}

// ReaderLead is who leads node's durable consumer on this log: a node
// receives nothing while its consumer has no leader, so this is what an
// operator reads to see why a node is not applying.
func (l *Log) ReaderLead(ctx context.Context, node string) (Lead, error) {
	c, err := l.stream.Consumer(ctx, ConsumerName(node))
	if err != nil {
		return Lead{}, classify(err)
	}
	info := c.CachedInfo()
	if ci := info.Cluster; info.Config.Replicas <= 1 && l.replicaCount() <= 1 && (ci == nil || ci.Leader == "") {
		// A lone broker runs no group to elect: its one server is the
		// reader's, for as long as the reader exists.
		return Lead{Leader: l.Server(), Since: info.Created}, nil
	}
	lead := leadOf(info.Cluster)
	if info.Config.Replicas == 1 && lead.Leader != "" && lead.Since.IsZero() {
		// One replica of a replicated stream (place.go): the broker names
		// its server and no election, so it has led since it was made.
		lead.Since = info.Created
	}
	return lead, nil
}

// electionBound is how long nats-server 2.15's raft takes at most to
// elect a leader after the last one went silent, 9 s (its longest
// election timeout), and a second to ask the one elected.
const electionBound = 10 * time.Second

// ElectionBound is how long this log may answer nothing, or no_quorum,
// while its stream elects a leader: electionBound on a replicated
// stream, 0 on one replica, which no election touches.
func (l *Log) ElectionBound() time.Duration {
	if l.replicaCount() > 1 {
		return electionBound
	}
	return 0
}

// Server is the name of the broker server this node's connection is on:
// its own embedded broker's, which is named after the node.
func (l *Log) Server() string { return l.js.Conn().ConnectedServerName() }

// stepDownAnswer is the broker's answer to a leader stepdown.
type stepDownAnswer struct {
	Success bool `json:"success"`
	Error   *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// stepDown asks the leader of a stream (consumer empty) or of a consumer
// to hand its leadership to server.
func (l *Log) stepDown(ctx context.Context, consumer, server string) error {
	subj := l.apiSubject("STREAM.LEADER.STEPDOWN." + l.name)
	if consumer != "" {
		subj = l.apiSubject("CONSUMER.LEADER.STEPDOWN." + l.name + "." + consumer)
	}
	body, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": server}})
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	msg, err := l.js.Conn().RequestWithContext(ctx, subj, body)
	if err != nil {
		return classify(err)
	}
	var a stepDownAnswer
	if err := json.Unmarshal(msg.Data, &a); err != nil {
		return fmt.Errorf("broker: stepdown answer on %s: %w", subj, err)
	}
	if a.Error != nil {
		return fmt.Errorf("broker: stepdown on %s refused: %s (%d)", subj, a.Error.Description, a.Error.ErrCode)
	}
	return nil
}

// MoveStreamLead asks this log's stream leader to hand over to server.
func (l *Log) MoveStreamLead(ctx context.Context, server string) error {
	return l.stepDown(ctx, "", server)
}

// MoveReaderLead asks the leader of node's consumer to hand over to
// server; ErrReaderFixed when the consumer is one replica, which has no
// group to hand over to.
func (l *Log) MoveReaderLead(ctx context.Context, node, server string) error {
	c, err := l.stream.Consumer(ctx, ConsumerName(node))
	if err != nil {
		return classify(err)
	}
	if c.CachedInfo().Config.Replicas == 1 {
		return ErrReaderFixed
	}
	return l.stepDown(ctx, ConsumerName(node), server)
}

// ReaderLeadEvery is how often a running reader checks that its own
// broker server leads its consumer.
const ReaderLeadEvery = 2 * time.Second

// errNotOurs is a reader lead there is nothing to ask for: this node's
// server is not a member of the consumer's group (an external broker the
// node is not a member of), or the consumer is one replica (place.go),
// which no election moves.
var errNotOurs = errors.New("broker: this node's server is not a member of its consumer's group")

// claimReader asks that this node's own server lead its consumer when
// another does. Each node's consumer is a replicated group of its own,
// and one led by a peer stops delivering when that peer dies, until the
// group elects again — seconds in which this node applies nothing and
// every write here answers pending. Led by the node's own server it dies
// only with the node, so a peer's loss costs this node's reader nothing.
func (l *Log) claimReader(ctx context.Context) (moved bool, err error) {
	own := l.Server()
	if own == "" {
		return false, nil
	}
	c, err := l.stream.Consumer(ctx, l.durable)
	if err != nil {
		return false, classify(err)
	}
	if c.CachedInfo().Config.Replicas == 1 {
		return false, errNotOurs
	}
	ci := c.CachedInfo().Cluster
	lead := leadOf(ci)
	if lead.Leader == "" || lead.Leader == own {
		// No group at all (a single broker), leaderless (the election
		// decides), or ours already.
		return false, nil
	}
	member := false
	for _, p := range ci.Replicas {
		member = member || p.Name == own
	}
	if !member {
		return false, errNotOurs
	}
	if err := l.stepDown(ctx, l.durable, own); err != nil {
		return false, err
	}
	l.log.Info(engine.EvReaderLeadClaimed, engine.LogDomain, l.domainName(), "from", lead.Leader, "to", own)
	return true, nil
}

// awaitReaderLead waits, a few seconds at most, for this node's server
// to lead its consumer after a claim, so the first pull finds a leader.
func (l *Log) awaitReaderLead(ctx context.Context) {
	deadline := time.Now().Add(ReaderLeadEvery)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if lead, err := l.ReaderLead(ctx, l.node); err == nil && lead.Leader == l.Server() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// keepReader claims this node's consumer lead every ReaderLeadEvery
// until done closes: a lead lost while this node's server
// was away or cut off comes back to it once it is reachable again.
func (l *Log) keepReader(done <-chan struct{}) {
	t := time.NewTicker(ReaderLeadEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := l.claimReader(ctx)
		cancel()
		if errors.Is(err, errNotOurs) {
			return
		}
		if err != nil {
			l.log.Debug("jetstream_reader_lead_unclaimed", engine.LogDomain, l.domainName(), engine.LogErr, err.Error())
		}
	}
}
