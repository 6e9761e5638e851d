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
	Name       string
	Subjects   []string
	MaxBytes   int64
	Duplicates time.Duration
	Replicas   int
}

// EnsureStream creates the stream when it is missing and otherwise leaves
// it exactly as it is: a booting node never rewrites a running stream's
// configuration. Either way the stream must persist in the default mode,
// since async persistence silently drops the sync guarantee.
func EnsureStream(ctx context.Context, js jetstream.JetStream, spec StreamSpec, log *slog.Logger) (jetstream.Stream, error) {
	log = log.With(engine.LogComponent, engine.ComponentEngine, engine.LogStream, spec.Name)
	s, err := js.Stream(ctx, spec.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		replicas := spec.Replicas
		if replicas == 0 {
			replicas = 1
		}
		s, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:       spec.Name,
			Subjects:   spec.Subjects,
			Storage:    jetstream.FileStorage,
			Retention:  jetstream.LimitsPolicy,
			Discard:    jetstream.DiscardNew,
			MaxBytes:   spec.MaxBytes,
			Duplicates: spec.Duplicates,
			Replicas:   replicas,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Another node created it first; take it as it is.
			s, err = js.Stream(ctx, spec.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("broker: create %s: %w", spec.Name, err)
		}
		log.Info("jetstream_stream_created", "max_bytes", spec.MaxBytes, "duplicates", spec.Duplicates.String(), "replicas", replicas)
	case err != nil:
		return nil, fmt.Errorf("broker: read %s: %w", spec.Name, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.PersistMode != jetstream.DefaultPersistMode {
		return nil, fmt.Errorf("broker: stream %s persists in %s mode; an acknowledged write on it need not be on disk. Set it back to the default persist mode", spec.Name, cfg.PersistMode)
	}
	if cfg.MaxBytes != spec.MaxBytes && spec.MaxBytes > 0 {
		log.Info(engine.EvStreamCapacityDiffers, "ceiling", cfg.MaxBytes, "would_create", spec.MaxBytes)
	}
	return s, nil
}
