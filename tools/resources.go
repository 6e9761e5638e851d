package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
)

// JSONMIME is every resource's MIME type: a resource is read as its get
// tool answers it (the level and position included), at the surface's
// own read level.
const JSONMIME = "application/json"

// ResourceKind is one kind of resource a toolset serves (a work item, a
// page): its URI template, and how to read one.
type ResourceKind struct {
	// Template is the URI template (crewlet://work-items/{key}); Prefix
	// is what comes before its one variable (crewlet://work-items/).
	Template, Prefix  string
	Name, Title, Desc string
	// Arg is the argument its variable completes as (Toolset.Complete).
	Arg string
	// Read reads the resource named id, as its get tool answers it.
	Read func(ctx context.Context, d Deps, id string) (any, error)
	// Scope is the scope a record names when it may change the resource
	// named id ("item:<id>", "space:DOCS"): what a subscription waits for.
	Scope func(ctx context.Context, d Deps, id string) (string, error)
}

// ResourceTemplates are the resource templates of the toolsets d serves,
// each with its read handler.
func (c Catalogue) ResourceTemplates(d Deps) []server.ServerResourceTemplate {
	var out []server.ServerResourceTemplate
	for _, ts := range c.served(d) {
		for _, k := range ts.Resources {
			t := mcp.NewResourceTemplate(k.Template, k.Name,
				mcp.WithTemplateTitle(k.Title),
				mcp.WithTemplateDescription(k.Desc+" It answers at this surface's read level, with the level and position."),
				mcp.WithTemplateMIMEType(JSONMIME))
			out = append(out, server.ServerResourceTemplate{Template: t, Handler: func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return d.readResource(ctx, k, req.Params.URI)
			}})
		}
	}
	return out
}

// readResource reads one resource: its JSON, as the get tool answers it.
// A refusal is an error whose text is the refusal's JSON object, so a
// client shows the code and the sentence.
func (d Deps) readResource(ctx context.Context, k ResourceKind, uri string) ([]mcp.ResourceContents, error) {
	id, ok := strings.CutPrefix(uri, k.Prefix)
	if !ok || id == "" || strings.Contains(id, "/") {
		return nil, ResourceError(engine.Refuse(engine.CodeInvalidArgument, "%s is not a %s URI; send %s.", Quote(uri), k.Name, k.Template))
	}
	res, err := k.Read(ctx, d, id)
	if err != nil {
		return nil, d.ResourceFailed(ctx, uri, err)
	}
	b, err := marshal(res)
	if err != nil {
		return nil, d.ResourceFailed(ctx, uri, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: JSONMIME, Text: string(b)}}, nil
}

// ResourceFailed is a read's error as a resource error: a refusal as its
// object, anything else logged and answered internal.
func (d Deps) ResourceFailed(ctx context.Context, uri string, err error) error {
	if r, ok := engine.AsRefusal(err); ok {
		return ResourceError(r)
	}
	d.Log().ErrorContext(ctx, "resource_read_failed", slog.String("uri", uri), slog.String(engine.LogErr, err.Error()))
	return ResourceError(engine.RefuseDoc(engine.CodeInternal))
}

// ResourceError carries a refusal through mcp-go, which answers a
// resource handler's error as a JSON-RPC error with its text.
func ResourceError(r *engine.Refusal) error {
	b, err := json.Marshal(r.ForFixedLevel().Object())
	if err != nil {
		return errors.New(r.Message)
	}
	return errors.New(string(b))
}

// NewResource is one resource of a listing.
func NewResource(uri, name, title string) mcp.Resource {
	return mcp.NewResource(uri, name, mcp.WithMIMEType(JSONMIME), mcp.WithResourceDescription(title))
}

// ResourceScope is the scope a record names when it may change the
// resource at uri: what a subscription to uri waits for.
func (c Catalogue) ResourceScope(ctx context.Context, d Deps, uri string) (string, error) {
	for _, ts := range c {
		for _, k := range ts.Resources {
			id, ok := strings.CutPrefix(uri, k.Prefix)
			if !ok {
				continue
			}
			if !d.Filter.Keeps(ts.Name, true) || id == "" {
				break
			}
			return k.Scope(ctx, d, id)
		}
	}
	return "", engine.Refuse(engine.CodeInvalidArgument, "%s is no resource of this server; resources/templates/list shows the URIs it serves.", Quote(uri))
}

// ResourceErr words a refusal for a JSON-RPC error (subscribe's).
func ResourceErr(err error) error {
	if r, ok := engine.AsRefusal(err); ok {
		return ResourceError(r)
	}
	return fmt.Errorf("internal: %w", err)
}
