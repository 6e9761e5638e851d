package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
)

// StreamSpec is what a missing domain stream is created with.
type StreamSpec struct {
	Name     string
	Subjects []string
	// MaxBytes is the ceiling a missing stream is created with; Fit the
	// one the sizing would give it on an empty broker, which an existing
	// stream's ceiling is reported against (0: not reported).
	MaxBytes   int64
	Fit        int64
	Duplicates time.Duration
	Replicas   int
	// Compacted keeps one message per subject (a keyed table), each for
	// at most MaxAge (0: for ever).
	Compacted bool
	MaxAge    time.Duration
	// Wait bounds how long a clustered boot waits for the JetStream meta
	// leader and enough peers to place the stream (default 2 min).
	Wait time.Duration
	// AtomicBatches creates a missing stream allowing atomic batch
	// publish, which Log combines concurrent appends into (combine.go).
	// Only for a broker known to have it (nats-server 2.12 and later):
	// the embedded one.
	AtomicBatches bool
}

// EnsureStream creates the stream when missing and otherwise leaves it
// exactly as it is (see ensureOnce). On a cluster the first attempts meet a
// JetStream with no meta leader yet, or too few peers for R replicas: it
// retries until the meta group answers, spec.Wait passes or ctx ends.
func EnsureStream(ctx context.Context, js jetstream.JetStream, spec StreamSpec, log *slog.Logger) (jetstream.Stream, error) {
	wait := spec.Wait
	if wait == 0 {
		wait = 2 * time.Minute
	}
	deadline := time.Now().Add(wait)
	lastLog := time.Now()
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := ensureOnce(actx, js, spec, log)
		cancel()
		var perm *permanentError
		if insufficient(err) {
			return nil, fmt.Errorf("%w: create %s with %d bytes: %v", ErrInsufficientStorage, spec.Name, spec.MaxBytes, err)
		}
		if err == nil || errors.As(err, &perm) || ctx.Err() != nil || time.Now().After(deadline) {
			if err != nil && !errors.As(err, &perm) && attempt > 1 {
				err = fmt.Errorf("%w (gave up after %d attempts over %s waiting for the JetStream cluster)", err, attempt, wait)
			}
			return s, err
		}
		if time.Since(lastLog) > 5*time.Second {
			log.Info("jetstream_cluster_waiting", engine.LogStream, spec.Name, "attempt", attempt, engine.LogErr, err.Error())
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("broker: ensure %s: %w", spec.Name, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// permanentError is an answer retrying cannot change.
type permanentError struct{ error }

func (p *permanentError) Unwrap() error { return p.error }

// ensureOnce creates the stream when it is missing and otherwise leaves
// it exactly as it is: a booting node never rewrites a running stream's
// configuration. Either way the stream must persist in the default mode,
// since async persistence silently drops the sync guarantee.
func ensureOnce(ctx context.Context, js jetstream.JetStream, spec StreamSpec, log *slog.Logger) (jetstream.Stream, error) {
	log = log.With(engine.LogComponent, engine.ComponentEngine, engine.LogStream, spec.Name)
	s, err := js.Stream(ctx, spec.Name)
	created := false
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		replicas := spec.Replicas
		if replicas == 0 {
			replicas = 1
		}
		sc := jetstream.StreamConfig{
			Name:       spec.Name,
			Subjects:   spec.Subjects,
			Storage:    jetstream.FileStorage,
			Retention:  jetstream.LimitsPolicy,
			Discard:    jetstream.DiscardNew,
			MaxBytes:   spec.MaxBytes,
			Duplicates: spec.Duplicates,
			Replicas:   replicas,

			AllowAtomicPublish: spec.AtomicBatches,
		}
		if spec.Compacted {
			sc.MaxMsgsPerSubject, sc.MaxAge = 1, spec.MaxAge
		}
		s, err = js.CreateStream(ctx, sc)
		created = err == nil
		if insufficient(err) {
			return nil, err
		}
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Another node created it first; take it as it is.
			s, err = js.Stream(ctx, spec.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("broker: create %s: %w", spec.Name, err)
		}
		if created {
			log.Info("jetstream_stream_created", "max_bytes", spec.MaxBytes, "duplicates", spec.Duplicates.String(), "replicas", replicas)
		}
	case err != nil:
		return nil, fmt.Errorf("broker: read %s: %w", spec.Name, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.PersistMode != jetstream.DefaultPersistMode {
		return nil, &permanentError{fmt.Errorf("broker: stream %s persists in %s mode; an acknowledged write on it need not be on disk. Set it back to the default persist mode", spec.Name, cfg.PersistMode)}
	}
	if !created && spec.Fit > 0 && cfg.MaxBytes != spec.Fit {
		// Harmless: its reservation was granted when it was made; crewlet
		// retention set-capacity changes it.
		log.Info(engine.EvStreamCapacityDiffers, "ceiling", cfg.MaxBytes, "fit", spec.Fit)
	}
	return s, nil
}
