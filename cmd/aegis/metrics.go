package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveMetrics are aegis serve's Prometheus metrics, at /metrics.
type serveMetrics struct {
	reg       *prometheus.Registry
	decisions *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	failed    *prometheus.CounterVec
	requests  *prometheus.CounterVec
	sessions  *prometheus.CounterVec
	upstream  *prometheus.CounterVec
}

// newServeMetrics registers the metrics; open says how many sessions are
// open, and store holds the approvals whose pending count is reported.
func newServeMetrics(open func() int, store *approval.Store) *serveMetrics {
	m := &serveMetrics{reg: prometheus.NewRegistry()}
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aegis_decisions_total", Help: "Decisions, by server, method (tools/call for a call), effect and the rules that made them.",
	}, []string{"server", "method", "effect", "rule"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "aegis_decision_seconds", Help: "Time to decide and durably record one decision.",
		Buckets: []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1},
	}, []string{"server"})
	m.failed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aegis_decisions_unrecorded_total", Help: "Decisions that could not be recorded (their calls were refused).",
	}, []string{"server"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aegis_http_requests_total", Help: "HTTP requests to the MCP endpoints, by server and status.",
	}, []string{"server", "status"})
	m.sessions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aegis_sessions_started_total", Help: "MCP sessions started, by server.",
	}, []string{"server"})
	m.upstream = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aegis_upstream_errors_total", Help: "Upstream servers that failed to start or ended with an error, by server.",
	}, []string{"server"})
	m.reg.MustRegister(m.decisions, m.latency, m.failed, m.requests, m.sessions, m.upstream,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aegis_sessions_open", Help: "MCP sessions open."},
			func() float64 { return float64(open()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aegis_approvals_pending", Help: "Calls waiting for a person's approval."},
			func() float64 {
				aps, err := store.List(context.Background(), false)
				if err != nil {
					return -1
				}
				return float64(len(aps))
			}),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// decision counts one decision (gateway.SessionConfig.Observe).
func (m *serveMetrics) decision(o gateway.Observation) {
	method := o.Method
	if method == "" {
		method = "tools/call"
	}
	if o.Err != nil {
		m.failed.WithLabelValues(o.Server).Inc()
		return
	}
	m.decisions.WithLabelValues(o.Server, method, o.Effect.String(), strings.Join(o.Rules, ",")).Inc()
	m.latency.WithLabelValues(o.Server).Observe(o.Took.Seconds())
}

// request counts one HTTP request (serve.Config.Observe).
func (m *serveMetrics) request(server string, status int) {
	m.requests.WithLabelValues(server, strconv.Itoa(status)).Inc()
}

func (m *serveMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
