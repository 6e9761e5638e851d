package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/broker"
)

// Bucket is the broker object store that holds the fleet's snapshots.
const Bucket = "CREWLET_SNAPSHOTS"

// ObjectStore is the default repository: the broker's own JetStream object
// store, replicated like the logs, so a fleet needs nothing else. The
// bucket reserves no bytes: the seeds leave the broker's other half to
// what reserves nothing, the snapshot a joining node reads among it, and
// its size is bounded by count instead — Keep artefacts per node.
type ObjectStore struct {
	js       jetstream.JetStream
	replicas int

	mu sync.Mutex
	os jetstream.ObjectStore
}

// NewObjectStore is the repository in js's object store bucket Bucket,
// created with replicas replicas on first use where it is missing.
func NewObjectStore(js jetstream.JetStream, replicas int) *ObjectStore {
	return &ObjectStore{js: js, replicas: max(replicas, 1)}
}

// Where names the bucket.
func (o *ObjectStore) Where() string { return "the broker's object store " + Bucket }

// openWait bounds how long one call waits for the bucket: long enough for
// a cluster that just started to place it, short enough that a caller
// polling the repository (the trim's backup gate) is never held for long.
const openWait = 30 * time.Second

// open finds or creates the bucket, retrying while a cluster settles (a
// member that just started answers nothing for a few seconds).
func (o *ObjectStore) open(ctx context.Context) (jetstream.ObjectStore, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.os != nil {
		return o.os, nil
	}
	ctx, cancel := context.WithTimeout(ctx, openWait)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, broker.RequestWait)
		s, err := o.js.ObjectStore(actx, Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			s, err = o.js.CreateObjectStore(actx, jetstream.ObjectStoreConfig{Bucket: Bucket, Replicas: o.replicas,
				Storage: jetstream.FileStorage, Description: "crewlet snapshots: the newest two per node"})
		}
		acancel()
		if err == nil {
			o.os = s
			return s, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("snapshot: open the object store %s: %w", Bucket, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Put uploads the artefact, then deletes the donor's surplus.
func (o *ObjectStore) Put(ctx context.Context, m Manifest, path string) error {
	s, err := o.open(ctx)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := s.Put(ctx, jetstream.ObjectMeta{Name: m.Name, Description: "snapshot of " + m.Donor,
		Metadata: map[string]string{"manifest": m.encode()}}, f); err != nil {
		return fmt.Errorf("snapshot: put %s in %s: %w", m.Name, Bucket, err)
	}
	all, err := o.List(ctx)
	if err != nil {
		return err
	}
	for _, old := range surplus(all, m.Donor) {
		if err := s.Delete(ctx, old.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("snapshot: drop %s from %s: %w", old.Name, Bucket, err)
		}
	}
	return nil
}

// List reads every artefact's manifest from the bucket.
func (o *ObjectStore) List(ctx context.Context) ([]Manifest, error) {
	s, err := o.open(ctx)
	if err != nil {
		return nil, err
	}
	// One listing is several broker requests (the bucket's last message,
	// then an ordered consumer); one sent while the bucket's stream elects
	// a leader — a member just stopped — is dropped unanswered, so it is
	// asked again in rounds rather than waited on for the caller's budget.
	var infos []*jetstream.ObjectInfo
	err = broker.Settle(ctx, openWait, func(ctx context.Context) error {
		infos, err = s.List(ctx)
		return err
	})
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: list %s: %w", Bucket, err)
	}
	var out []Manifest
	for _, in := range infos {
		m, err := decodeManifest(in.Metadata["manifest"])
		if err != nil {
			continue // not one of ours
		}
		out = append(out, m)
	}
	newestFirst(out)
	return out, nil
}

// Fetch downloads m's artefact to dst and verifies it against m.
func (o *ObjectStore) Fetch(ctx context.Context, m Manifest, dst string) error {
	return o.FetchProgress(ctx, m, dst, nil)
}

// FetchProgress is Fetch telling progress (nil: nobody) the bytes written
// so far and the artefact's size as the download goes.
func (o *ObjectStore) FetchProgress(ctx context.Context, m Manifest, dst string, progress Progress) error {
	s, err := o.open(ctx)
	if err != nil {
		return err
	}
	err = o.download(ctx, s, m, dst, progress)
	if errors.Is(err, jetstream.ErrDigestMismatch) {
		os.Remove(dst)
		return &CorruptError{Name: m.Name, Want: m.SHA256, Got: "(the object store's own digest differs)"}
	}
	if err != nil {
		os.Remove(dst)
		return fmt.Errorf("snapshot: fetch %s from %s: %w", m.Name, Bucket, err)
	}
	if err := Verify(dst, m); err != nil {
		os.Remove(dst)
		return err
	}
	return nil
}

// download streams the object to dst (what GetFile does) through a
// counter, so progress sees the bytes as they land.
func (o *ObjectStore) download(ctx context.Context, s jetstream.ObjectStore, m Manifest, dst string, progress Progress) error {
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := s.Get(ctx, m.Name)
	if err != nil {
		return err
	}
	defer res.Close()
	if _, err := io.Copy(&counting{w: f, total: m.Size, progress: progress}, res); err != nil {
		return err
	}
	return f.Sync()
}

// Reached is the highest checkpoint per domain any stored snapshot covers.
func (o *ObjectStore) Reached(ctx context.Context) (map[string]uint64, error) {
	ms, err := o.List(ctx)
	if err != nil {
		return nil, err
	}
	return reached(ms), nil
}
