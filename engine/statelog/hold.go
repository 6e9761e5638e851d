package statelog

import (
	"context"
	"fmt"
)

// Resume ends the hold of a replica opened below the floor, once its rows
// were replaced under it (a peer's snapshot restored into the database):
// it reads everything it keeps from the new rows — rederiving computed
// columns where the rules differ — opens its reader at the new checkpoint
// (rebuilt there: behind_checkpoint) and starts the applier. Reads and
// writes stop refusing below_floor on their own.
func (r *Replica) Resume(ctx context.Context) error {
	r.life.Lock()
	defer r.life.Unlock()
	if !r.belowFloor.Load() {
		return fmt.Errorf("statelog: %s is not held below the floor", r.domain)
	}
	// The notes describe the rows that were replaced.
	r.landed.forget()
	// The new rows may be an older build's file: they take this build's
	// schema as at any open (a table it adds, a layout it relays).
	if err := r.migrate(ctx); err != nil {
		return err
	}
	cp, err := r.load(ctx)
	if err != nil {
		return err
	}
	if err := r.start(ctx, cp); err != nil {
		return err
	}
	r.belowFloor.Store(false)
	return nil
}
