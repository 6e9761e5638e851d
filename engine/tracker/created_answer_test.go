package tracker_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// TestCreatedAnswerIsTheRowsItem: a create answers with the item its
// apply filed, built from what the apply held (trackapply.CreatedBy)
// rather than read back from the rows. Over drawn creates (every status,
// an assignee or none, tags given twice, every field set or left alone,
// and some with a parent or a dependency, whose answers name other items
// by key and so are read), each answer equals, field for field, the item
// a linearizable get reads right after it; and every create with neither
// a parent nor a dependency was answered from its apply.
func TestCreatedAnswerIsTheRowsItem(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	keys := []string{r.item("ENG", "an earlier item", "")}
	fromApply, before := 0, tracker.CreatedAnswers()
	rapid.Check(t, func(rt *rapid.T) {
		in := tracker.NewWorkItem{Project: "ENG", Title: rapid.SampledFrom([]string{"a", "crash on save"}).Draw(rt, "title"),
			Description: rapid.SampledFrom([]string{"", "steps: open, save"}).Draw(rt, "description"),
			Status:      rapid.SampledFrom(append([]string{""}, trackrec.Statuses...)).Draw(rt, "status"),
			Assignee:    rapid.SampledFrom([]string{"", "ana"}).Draw(rt, "assignee"),
			Tags:        rapid.SliceOfN(rapid.SampledFrom([]string{"ui", "bug", "p1"}), 0, 4).Draw(rt, "tags"),
			Priority:    rapid.SampledFrom(append([]string{""}, trackrec.Priorities...)).Draw(rt, "priority"),
			Due:         rapid.SampledFrom([]string{"", "2027-01-31"}).Draw(rt, "due"),
			Estimate:    rapid.SampledFrom([]float64{0, 2.5}).Draw(rt, "estimate"),
			Type:        rapid.SampledFrom(append([]string{""}, trackrec.ItemTypes...)).Draw(rt, "type")}
		switch rapid.IntRange(0, 5).Draw(rt, "other") {
		case 0:
			in.Parent = rapid.SampledFrom(keys).Draw(rt, "parent")
		case 1:
			in.DependsOn = []string{rapid.SampledFrom(keys).Draw(rt, "depends on")}
		}
		w, err := r.svc.CreateWorkItem(ctx, engine.WriteOptions{}, in)
		if err != nil || w.Outcome != engine.Applied || w.Item == nil {
			rt.Fatalf("create %+v: %+v %v", in, w, err)
		}
		if in.Parent == "" && len(in.DependsOn) == 0 {
			fromApply++
		}
		keys = append(keys, w.Item.Key)
		got, err := r.svc.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, w.Item.Key)
		if err != nil {
			rt.Fatal(err)
		}
		if !reflect.DeepEqual(*w.Item, got.Item) {
			rt.Fatalf("the create answered\n%+v\nand a get reads\n%+v", *w.Item, got.Item)
		}
	})
	if got := tracker.CreatedAnswers() - before; got != uint64(fromApply) {
		t.Fatalf("%d of the %d creates with no parent and no dependency were answered from their apply", got, fromApply)
	}
}
