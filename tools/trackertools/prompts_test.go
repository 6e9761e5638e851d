package trackertools

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/kbtools"
)

func getPrompt(t *testing.T, f *fakeTracker, d tools.Deps, ctx context.Context, name string, args map[string]string) (string, error) {
	t.Helper()
	for _, p := range (tools.Catalogue{Toolset(f)}).Prompts(d) {
		if p.Prompt.Name != name {
			continue
		}
		req := mcp.GetPromptRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := p.Handler(ctx, req)
		if err != nil {
			return "", err
		}
		return res.Messages[0].Content.(mcp.TextContent).Text, nil
	}
	t.Fatalf("no prompt %s", name)
	return "", nil
}

// TestPromptsFollowTheSurface: a prompt reads as its surface reads (a
// seat's floored at its trigger), asks for proposals, not writes, under
// --read-only, refuses a missing or malformed argument with a sentence,
// and is not offered where the tracker's toolset is filtered out.
func TestPromptsFollowTheSurface(t *testing.T) {
	f := &fakeTracker{}
	op := tools.Deps{Surface: tools.Operator}
	text, err := getPrompt(t, f, op, context.Background(), PromptTriage, map[string]string{"project": "ENG"})
	if err != nil || !strings.Contains(text, "update_work_item") || f.lastF.Status != "open" || f.lastF.Project != "ENG" {
		t.Fatalf("triage: %q %v (filter %+v)", text, err, f.lastF)
	}
	ro := tools.Deps{Surface: tools.Operator, Filter: tools.Filter{ReadOnly: true}}
	if text, err := getPrompt(t, f, ro, context.Background(), PromptFindDuplicates, map[string]string{"key": "ENG-2"}); err != nil || !strings.Contains(text, "read-only") || strings.Contains(text, "Then merge") {
		t.Errorf("read-only find_duplicates: %q %v", text, err)
	}
	for _, args := range []map[string]string{{}, {"project": "eng!"}} {
		if _, err := getPrompt(t, f, op, context.Background(), PromptStatusReport, args); err == nil || !strings.Contains(err.Error(), `"refused":"invalid_argument"`) {
			t.Errorf("status_report %v: %v, want invalid_argument", args, err)
		}
	}
	trigger := engine.Position{Stream: engine.StreamTracker, Generation: 1, Seq: 7}
	ctx := tools.WithTurn(context.Background(), tools.Turn{Seat: "s", Unit: "u", Trigger: &trigger})
	seat := tools.Deps{Surface: tools.Seat}
	if _, err := getPrompt(t, f, seat, ctx, PromptStatusReport, map[string]string{"project": "ENG"}); err != nil || f.lastR.MinPosition == nil || *f.lastR.MinPosition != trigger {
		t.Errorf("seat status_report read %+v (%v), want floored at %v", f.lastR, err, trigger)
	}
	if ps := (tools.Catalogue{Toolset(f)}).Prompts(tools.Deps{Surface: tools.Operator, Filter: tools.Filter{Toolsets: []string{kbtools.Name}}}); len(ps) != 0 {
		t.Errorf("--toolsets kb offers %d tracker prompts", len(ps))
	}
}

// TestResourceTemplatesFollowTheFilter: --toolsets kb serves the pages
// and spaces as resources, not the tracker's.
func TestResourceTemplatesFollowTheFilter(t *testing.T) {
	var got []string
	for _, r := range (tools.Catalogue{Toolset(&fakeTracker{}), kbtools.Toolset((*kb.Service)(nil))}).ResourceTemplates(tools.Deps{Surface: tools.Operator, Filter: tools.Filter{Toolsets: []string{kbtools.Name}}}) {
		got = append(got, r.Template.URITemplate.Raw())
	}
	if strings.Join(got, " ") != kbtools.ResourcePage+" "+kbtools.ResourceSpace {
		t.Errorf("--toolsets kb: templates %v, want the page's and the space's", got)
	}
	got = nil
	for _, r := range (tools.Catalogue{Toolset(&fakeTracker{})}).ResourceTemplates(tools.Deps{Surface: tools.Operator}) {
		got = append(got, r.Template.URITemplate.Raw())
	}
	if strings.Join(got, " ") != ResourceWorkItem+" "+ResourceProject {
		t.Errorf("a tracker alone: templates %v", got)
	}
}
