package usage

import (
	"context"
	"database/sql"
	"errors"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/usage/usageapply"
	"github.com/crewlet/crewlet/engine/usage/usagerec"
)

// publishOne publishes one object's whole value unless this node's rows
// already hold it (its digest): done says it was published. Each
// publication is a write of its own under a fresh op id, on a subject no
// other node writes.
func (s *Service) publishOne(ctx context.Context, d usagerec.Day) (bool, error) {
	subject := usagerec.DaySubject(d.Node, d.Day, d.Seat)
	digest := usageapply.Digest(d)
	s.mu.Lock()
	last := s.published[subject]
	s.mu.Unlock()
	if last == digest {
		return false, nil
	}
	have, err := s.appliedDigest(ctx, d)
	if err != nil {
		return false, err
	}
	if have == digest {
		s.remember(subject, digest)
		return false, nil
	}
	op, err := statelog.OpFor(s.clock.Now(), engine.WriteOptions{}, "publish_usage", d.Day)
	if err != nil {
		return false, err
	}
	wr, err := s.replica.Write(ctx, op, func(context.Context, *sql.Tx) (*statelog.Proposal, error) {
		return &statelog.Proposal{Kind: usagerec.KindDay, Version: usagerec.DayVersion, Subject: subject,
			Scope: []string{usagerec.DayScope(d.Node, d.Day, d.Seat)}, Payload: d}, nil
	})
	if err != nil {
		return false, err
	}
	if wr.Outcome != engine.Unknown {
		// Applied or pending: durable. An unknown one is derived and
		// published again on the next tick.
		s.remember(subject, digest)
	}
	s.log.Debug("usage_day_published", "day", d.Day, "seat", d.Seat, "outcome", string(wr.Outcome), engine.LogPosition, wr.Position)
	return true, nil
}

func (s *Service) remember(subject, digest string) {
	s.mu.Lock()
	s.published[subject] = digest
	s.mu.Unlock()
}

// appliedDigest is the digest of the object's value in this node's rows,
// "" where they hold none.
func (s *Service) appliedDigest(ctx context.Context, d usagerec.Day) (string, error) {
	var digest string
	_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT digest FROM usage_days WHERE node = ? AND day = ? AND seat = ?`, d.Node, d.Day, d.Seat).Scan(&digest)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return digest, err
}
