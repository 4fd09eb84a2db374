// Package policycmp compares aegis's policy engine with cedar-go and OPA on
// the same decisions (DESIGN.md, "Performance budgets"). It owns one Go
// description of the benchmark policies ([Bench10], [Bench1100]), the
// generators that render it as aegis YAML, Cedar and Rego, an adapter per
// engine that decides a policy.Request with its deciding rules, and the
// generated request mix. The agreement tests hold the three engines to the
// same decision and the same deciding rule on every target; the benchmarks
// and cmd/ratio time them.
//
// The mappings are documented where they are generated: cedar.go for
// Cedar, opa.go for Rego. RESULTS.md has the figures and how they were
// measured.
package policycmp
