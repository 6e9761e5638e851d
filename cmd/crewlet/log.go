package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/lmittmann/tint"
	"github.com/mattn/go-isatty"

	"github.com/crewlet/crewlet/engine"
)

// ComponentCmd is the component of lines this command writes itself.
const ComponentCmd = "cmd"

// ComponentLib is the component of lines libraries write through Go's
// standard log package (mcp-go does, on some panics it recovers).
const ComponentLib = "lib"

// Log formats of --log-format.
const (
	LogFormatAuto = "auto"
	LogFormatJSON = "json"
	LogFormatText = "text"
)

// NewLogger builds the process's one logger, writing to w (always stderr in
// production: stdout may belong to the MCP protocol). auto is tint with
// colour when w is a terminal and JSON otherwise; text is tint, coloured
// only on a terminal; json is slog's JSON handler.
//
// Every line carries `component`. The returned logger writes component=cmd;
// a package that calls With("component", x) replaces it rather than adding
// a second key, so the engine and the MCP layer can name themselves.
func NewLogger(w io.Writer, format string, level slog.Leveler) (*slog.Logger, error) {
	tty := isTerminal(w)
	var h slog.Handler
	switch format {
	case "", LogFormatAuto, LogFormatJSON:
		if LogsJSON(w, format) {
			h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
		} else {
			h = newTint(w, level, false)
		}
	case LogFormatText:
		h = newTint(w, level, !tty)
	default:
		return nil, usageErrorf("--log-format %q is not one of auto, json, text", format)
	}
	return slog.New(newComponentHandler(h, ComponentCmd)), nil
}

// LogsJSON reports whether NewLogger writes JSON to w in format: json, or
// auto off a terminal. Then every line on w must be JSON, so what the
// command would print for a person it logs instead.
func LogsJSON(w io.Writer, format string) bool {
	return format == LogFormatJSON || (format == "" || format == LogFormatAuto) && !isTerminal(w)
}

// routeLibraryLogs sends what libraries write through Go's standard log
// package through logger under component lib: left alone, those lines
// go raw to stderr and break a JSON log.
func routeLibraryLogs(logger *slog.Logger) {
	slog.SetDefault(logger.With(engine.LogComponent, ComponentLib))
}

func newTint(w io.Writer, level slog.Leveler, noColor bool) slog.Handler {
	return tint.NewTextHandler(w, &tint.Options{
		Level:      level,
		TimeFormat: "15:04:05.000",
		NoColor:    noColor,
	})
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd())
}

// componentHandler keeps exactly one top-level `component` attribute on
// every record: the latest one given to WithAttrs wins, and it is written
// first. Attributes added after a WithGroup are inside that group and are
// passed through untouched.
type componentHandler struct {
	base      slog.Handler // without any attributes of ours
	component string
	steps     []handlerStep // attributes and groups added after base
	grouped   bool          // a group is open: component can no longer change
	h         slog.Handler  // base + component + steps
}

type handlerStep struct {
	attrs []slog.Attr
	group string
}

func newComponentHandler(base slog.Handler, component string) *componentHandler {
	c := &componentHandler{base: base, component: component}
	c.h = c.build()
	return c
}

func (c *componentHandler) build() slog.Handler {
	h := c.base.WithAttrs([]slog.Attr{slog.String(engine.LogComponent, c.component)})
	for _, s := range c.steps {
		if s.group != "" {
			h = h.WithGroup(s.group)
		} else {
			h = h.WithAttrs(s.attrs)
		}
	}
	return h
}

func (c *componentHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return c.h.Enabled(ctx, l)
}

// Handle writes r. A record that carries its own top-level component
// (logger.Info(msg, "component", x)) is written under that one instead.
func (c *componentHandler) Handle(ctx context.Context, r slog.Record) error {
	if c.grouped {
		return c.h.Handle(ctx, r)
	}
	comp, found := "", false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == engine.LogComponent {
			comp, found = a.Value.String(), true
		}
		return true
	})
	if !found {
		return c.h.Handle(ctx, r)
	}
	nr := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != engine.LogComponent {
			nr.AddAttrs(a)
		}
		return true
	})
	if comp == c.component {
		return c.h.Handle(ctx, nr)
	}
	o := &componentHandler{base: c.base, component: comp, steps: c.steps}
	return o.build().Handle(ctx, nr)
}

func (c *componentHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return c
	}
	n := &componentHandler{base: c.base, component: c.component, grouped: c.grouped}
	n.steps = append([]handlerStep(nil), c.steps...)
	rest := attrs
	if !c.grouped {
		rest = make([]slog.Attr, 0, len(attrs))
		for _, a := range attrs {
			if a.Key == engine.LogComponent {
				n.component = a.Value.String()
				continue
			}
			rest = append(rest, a)
		}
	}
	if len(rest) > 0 {
		n.steps = append(n.steps, handlerStep{attrs: rest})
	}
	if n.component != c.component {
		n.h = n.build()
	} else if len(rest) > 0 {
		n.h = c.h.WithAttrs(rest)
	} else {
		n.h = c.h
	}
	return n
}

func (c *componentHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return c
	}
	n := &componentHandler{base: c.base, component: c.component, grouped: true}
	n.steps = append(append([]handlerStep(nil), c.steps...), handlerStep{group: name})
	n.h = c.h.WithGroup(name)
	return n
}
