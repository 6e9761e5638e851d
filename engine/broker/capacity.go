package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/capacity"
	"github.com/crewlet/crewlet/engine/statelog"
)

// ErrInsufficientStorage is the broker refusing a reservation: a stream
// created or raised past what its storage limit has left.
var ErrInsufficientStorage = errors.New("broker: insufficient storage resources to reserve the ceiling")

// insufficient reports whether err is the broker's refusal of a
// reservation (JSStorageResourcesExceededErr). JSInsufficientResourcesErr
// is not one: nats-server answers it for high-availability asset counts,
// not storage.
func insufficient(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && ae.ErrorCode == 10047
}

// volumeLimit is what an embedded broker without stream.store_max_bytes
// takes as its limit: three quarters of the free space on the volume
// holding dir, counting what the broker's streams already hold there, so
// a restart with a full log measures the same limit its first boot did.
// It is measured once, when the broker starts.
func volumeLimit(dir string) (int64, error) {
	free, err := VolumeFree(dir)
	if err != nil {
		return 0, err
	}
	return (free + heldUnder(dir)) / 4 * 3, nil
}

// heldUnder is the bytes of the files under dir (0 when it is missing).
func heldUnder(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// VolumeFree is the free space available on the volume holding dir (or
// its nearest existing parent, for a store directory not made yet).
func VolumeFree(dir string) (int64, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return 0, err
	}
	for {
		n, err := statfsFree(d)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return 0, err
		}
		d = parent
	}
}

// Grant reads what the broker can grant: an embedded broker's own limit
// (stream.store_max_bytes, else the volume limit it started with) and
// what its streams reserve; an external one's account JetStream limit
// (Limit 0 where the account states none). src says what sets it.
func (e *Embedded) Grant(ctx context.Context) (capacity.Grant, capacity.Source, error) {
	if e.Server != nil {
		src := capacity.Source{Kind: capacity.SourceVolume, StoreDir: e.storeDir}
		if e.maxStoreSet {
			src.Kind = capacity.SourceStoreMaxBytes
		}
		cfg := e.Server.JetStreamConfig()
		_, reserved, err := e.Server.JetStreamReservedResources()
		if cfg == nil || err != nil {
			return capacity.Grant{}, src, fmt.Errorf("broker: JetStream's limits cannot be read: %v", err)
		}
		return capacity.Grant{Limit: cfg.MaxStore, Reserved: reserved}, src, nil
	}
	src := capacity.Source{Kind: capacity.SourceAccount}
	ai, err := e.JS.AccountInfo(ctx)
	if err != nil {
		return capacity.Grant{}, src, fmt.Errorf("broker: the account's JetStream limits cannot be read: %w", err)
	}
	g := capacity.Grant{Reserved: int64(ai.ReservedStore)}
	if ai.Limits.MaxStore > 0 {
		g.Limit = ai.Limits.MaxStore
	}
	return g, src, nil
}

// Ceiling is one stream's ceiling as the broker reported it.
type Ceiling struct {
	// Exists: the stream exists with MaxBytes.
	Exists   bool
	MaxBytes int64
	// Unread: the broker never answered within the bound, or refused the
	// read (Err says how); the log counts as one this boot would create.
	Unread bool
	Err    error
}

// CeilingRead bounds ReadCeilings: each read is asked again every Every
// for up to Within while nobody answers (Replication: every two seconds
// for up to thirty).
type CeilingRead struct {
	Every, Within time.Duration
}

// DefaultCeilingRead is the page's bound.
var DefaultCeilingRead = CeilingRead{Every: 2 * time.Second, Within: 30 * time.Second}

// ReadCeilings reads every named stream's ceiling at once, each asked
// again every b.Every for up to b.Within while nobody answers. A missing
// stream answers Exists false; a read unanswered after the bound, or
// refused, answers Unread.
func ReadCeilings(ctx context.Context, js jetstream.JetStream, names []string, b CeilingRead) map[string]Ceiling {
	out := make(map[string]Ceiling, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			c := readCeiling(ctx, js, name, b)
			mu.Lock()
			out[name] = c
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func readCeiling(ctx context.Context, js jetstream.JetStream, name string, b CeilingRead) Ceiling {
	deadline := time.Now().Add(b.Within)
	for {
		start := time.Now()
		actx, cancel := context.WithTimeout(ctx, b.Every)
		s, err := js.Stream(actx, name)
		cancel()
		var ae *jetstream.APIError
		switch {
		case err == nil:
			return Ceiling{Exists: true, MaxBytes: s.CachedInfo().Config.MaxBytes}
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return Ceiling{}
		case errors.As(err, &ae) && ae.Code != 503:
			return Ceiling{Unread: true, Err: err}
		}
		next := start.Add(b.Every)
		if next.After(deadline) || ctx.Err() != nil {
			return Ceiling{Unread: true, Err: err}
		}
		select {
		case <-ctx.Done():
			return Ceiling{Unread: true, Err: ctx.Err()}
		case <-time.After(time.Until(next)):
		}
	}
}

// SetMaxBytes changes the log's ceiling to n and returns the ceiling and
// the bytes it held before: the one change a node makes to a running
// stream's configuration, on the operator's word (crewlet retention
// set-capacity). The stream's configuration is the fleet's, so one call
// changes it for every node. The broker checks a raise against what its
// limit has left (ErrInsufficientStorage) and grants a lowering at once.
//
// Each request is a round of RequestWait, asked again within ctx while
// the broker answers nothing. An update whose answer is lost may have
// landed, so before it is sent again the ceiling is read back: one that
// already reads n is the update's answer.
func (l *Log) SetMaxBytes(ctx context.Context, n int64) (before int64, held uint64, err error) {
	var info *jetstream.StreamInfo
	err = Settle(ctx, settleWait, func(rctx context.Context) error {
		var err error
		info, err = l.fullInfo(rctx)
		return err
	})
	if err != nil {
		return 0, 0, classify(err)
	}
	before, held = info.Config.MaxBytes, info.State.Bytes
	if n == before {
		return before, held, nil
	}
	cfg := info.Config
	cfg.MaxBytes = n
	sent := false
	err = Settle(ctx, settleWait, func(rctx context.Context) error {
		if sent {
			if now, err := l.fullInfo(rctx); err != nil {
				return err
			} else if now.Config.MaxBytes == n {
				return nil // it landed; its answer did not
			}
		}
		sent = true
		_, err := l.js.UpdateStream(rctx, cfg)
		return err
	})
	if insufficient(err) {
		return before, held, fmt.Errorf("%w: raise %s to %d bytes: %v", ErrInsufficientStorage, l.name, n, err)
	}
	if err != nil {
		return before, held, classify(err)
	}
	return before, held, nil
}

// VolumeHeadroom is the free space an append leaves on the store's
// volume beyond its own bytes: the file store's block and index writes
// around the record. Below it the append is refused before it is sent,
// because a broker whose store write fails for want of disk never
// answers the publish (nats-server logs it and keeps silent).
const VolumeHeadroom = 1 << 20

// SetVolume makes every append check the volume holding dir (the
// embedded broker's store) for room first.
func (l *Log) SetVolume(dir string) { l.volume = dir }

// volumeRoom refuses an append of size bytes with statelog.ErrVolumeFull
// when the store's volume has less than size plus VolumeHeadroom free.
// An unreadable volume leaves the append to the broker.
func (l *Log) volumeRoom(size int) error {
	if l.volume == "" {
		return nil
	}
	free, err := VolumeFree(l.volume)
	if err != nil || free >= int64(size)+VolumeHeadroom {
		return nil
	}
	return fmt.Errorf("%w: %d bytes free on the volume holding %s, an append of %d bytes needs %d more kept free", statelog.ErrVolumeFull, free, l.volume, size, VolumeHeadroom)
}

// VolumeFull says whether the volume holding the embedded broker's store
// has less than VolumeHeadroom free, and how much it has; false for an
// external broker.
func (e *Embedded) VolumeFull() (bool, int64) {
	if e.Server == nil || e.storeDir == "" {
		return false, 0
	}
	free, err := VolumeFree(e.storeDir)
	return err == nil && free < VolumeHeadroom, free
}
