package broker

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
)

// A node's reader on a replicated stream is, by default on an embedded
// broker, one replica on the node's own broker server rather than a group
// on the stream's replicas. A group agrees on every delivery and every
// acknowledgement through its raft log, fsynced under sync always, before
// it hands the next record over; measured at three replicas and 64
// writers, that agreement was about a third of the fleet's write
// throughput. One replica needs no agreement, and on the node's own
// server it dies only with the node, which is what the lead claim
// (claimReader) gives a group reader and more: no election to wait for
// when a peer goes. Its position is still on disk, in the node's own
// broker store.

// SetOwnReader makes this node's reader of a replicated stream one
// replica on its own broker server (see placeReader). Only for an
// embedded broker, whose server is the node's own: a connection to an
// external broker may move to another server, and the reader with it.
func (l *Log) SetOwnReader() { l.ownReader = true }

// placeTries bounds how many times a reader is made again to land on this
// node's own server. nats-server places a one-replica consumer at random
// among the stream's replicas, preferring those its meta leader counts
// as caught up, so on three replicas a try lands with a chance of one in
// three, and sixteen all miss with a chance of 0.15%. The pause between
// tries gives a server that has just joined (and is not yet counted as
// caught up) a moment to be.
const (
	placeTries = 16
	placePause = 100 * time.Millisecond
)

// ErrReaderFixed is a reader lead that cannot move: the reader is one
// replica, with no group to elect another server.
var ErrReaderFixed = errors.New("broker: this reader is one replica on its node's own server, and no election moves it")

// createReader makes this node's reader at checkpoint: one replica on its
// own server where SetOwnReader asked for it and the server holds a
// replica of the stream, otherwise a group on the stream's replicas (what
// an external broker, a lone broker and a missed placement get).
func (l *Log) createReader(ctx context.Context, checkpoint uint64) (jetstream.Consumer, error) {
	if !l.placesOwnReader(ctx) {
		return l.stream.CreateConsumer(ctx, l.consumerConfig(checkpoint))
	}
	own := l.Server()
	cfg := l.consumerConfig(checkpoint)
	cfg.Replicas = 1
	missed := ""
	for try := 0; try < placeTries; try++ {
		c, err := l.stream.CreateConsumer(ctx, cfg)
		if err != nil {
			return nil, err
		}
		ci := c.CachedInfo().Cluster
		if ci != nil && ci.Leader == own {
			return c, nil
		}
		if ci != nil {
			missed = ci.Leader
		}
		// Deleted on a context of its own: a reader left on a peer would
		// stop with that peer.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RequestWait)
		err = l.stream.DeleteConsumer(dctx, l.durable)
		cancel()
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(placePause):
		}
	}
	l.log.Warn(engine.EvReaderUnplaced, engine.LogDomain, l.domainName(), "server", own, "tries", placeTries, "last_placed_on", missed,
		"note", "the broker placed this node's reader on a peer every time, so it is a group on the stream's replicas this time, led by this node's server where it can be; the next boot tries again")
	return l.stream.CreateConsumer(ctx, l.consumerConfig(checkpoint))
}

// placesOwnReader says this node's reader is to be one replica on its own
// server: asked for, on a replicated stream that has a replica there.
// The stream's peers are read afresh where the broker answers (they
// change when the stream moves), from when the log was opened otherwise.
func (l *Log) placesOwnReader(ctx context.Context) bool {
	own := l.Server()
	if !l.ownReader || own == "" || l.replicaCount() <= 1 {
		return false
	}
	info, err := l.fullInfo(ctx)
	if err != nil {
		info = l.stream.CachedInfo()
	}
	ci := info.Cluster
	if ci == nil {
		return false
	}
	return ci.Leader == own || slices.ContainsFunc(ci.Replicas, func(p *jetstream.PeerInfo) bool { return p.Name == own })
}

// misplaced says a reader this node found is not one replica on its own
// server although it could be: one replica on another server (a
// placement cut short), which would stop with that server, or a group (a
// placement that missed every try, or a reader made before readers were
// placed), which agrees on every delivery.
//
// A one-replica reader the broker names no server for (its answer may
// leave the cluster out while the server recovers) is left as it is:
// made again, one that was in fact on this node's server would be
// rebuilt for nothing.
func (l *Log) misplaced(ctx context.Context, info *jetstream.ConsumerInfo) bool {
	if info.Config.Replicas == 1 {
		if lead := leadOf(info.Cluster).Leader; lead == "" || lead == l.Server() {
			return false
		}
	}
	return l.placesOwnReader(ctx)
}
