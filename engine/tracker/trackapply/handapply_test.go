package trackapply_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
)

// applyByHand applies one record in tx at seq as a domain applied by hand
// (no applier, so what creates hold back is written before it returns):
// its payload marshalled, its instant seq seconds after a fixed one, its
// history written by "tester".
func applyByHand(ctx context.Context, tx *sql.Tx, seq uint64, kind, subject string, payload any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	rec := &record.Record{Kind: kind, Subject: subject, Payload: data, By: "tester"}
	return trackapply.Domain{}.Apply(ctx, tx, rec, statelog.Applying{Seq: seq, Time: time.Unix(1_700_000_000+int64(seq), 0)})
}
