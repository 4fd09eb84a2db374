package main

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/aegis-mcp/aegis/internal/gateway"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// tracing sends aegis serve's spans to an OTLP/HTTP collector: one per
// HTTP request to an MCP endpoint, and one per decision, with the server,
// method, effect and rules (never an argument).
type tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// newTracing exports to the collector at endpoint (its base URL, such as
// http://127.0.0.1:4318).
func newTracing(ctx context.Context, endpoint string) (*tracing, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(semconv.ServiceName("aegis"), semconv.ServiceVersion(version))
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &tracing{provider: p, tracer: p.Tracer("github.com/aegis-mcp/aegis/serve")}, nil
}

// shutdown flushes what is buffered.
func (t *tracing) shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

// decision records one decision as a span, after the fact.
func (t *tracing) decision(o gateway.Observation) {
	end := time.Now()
	method := o.Method
	if method == "" {
		method = "tools/call"
	}
	_, span := t.tracer.Start(context.Background(), "aegis.decision", trace.WithTimestamp(end.Add(-o.Took)),
		trace.WithAttributes(
			attribute.String("aegis.server", o.Server),
			attribute.String("mcp.method", method),
			attribute.String("aegis.effect", o.Effect.String()),
			attribute.StringSlice("aegis.rules", o.Rules),
		))
	if o.Err != nil {
		span.SetStatus(codes.Error, "the decision could not be recorded")
	}
	span.End(trace.WithTimestamp(end))
}

// wrap gives each HTTP request to h a span.
func (t *tracing) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := t.tracer.Start(r.Context(), r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// statusWriter notes the status a handler writes; Unwrap lets
// http.ResponseController reach the connection (flushes, deadlines).
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
