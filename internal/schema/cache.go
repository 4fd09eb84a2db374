package schema

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Cache compiles each pinned input schema once. Its zero value is ready to use and it
// is safe for concurrent use. A compile error is cached too: a schema that cannot be
// compiled denies every call without being compiled again.
type Cache struct {
	// Max caps the number of compiled schemas kept; zero means 4096. Past it, an
	// arbitrary entry is dropped (and compiled again if needed).
	Max int

	mu sync.Mutex
	m  map[cacheKey]*cacheEntry
}

type cacheKey struct {
	hash [32]byte
	opts string
}

type cacheEntry struct {
	once sync.Once
	s    *Schema
	err  error
}

// Schema returns the compiled form of inputSchema with o. key MUST identify
// inputSchema: pass the pin's full hash (pin.Digest converts to [32]byte), which
// covers the whole definition as listed. o is part of the key, by value.
func (c *Cache) Schema(key [32]byte, inputSchema []byte, o *Options) (*Schema, error) {
	k := cacheKey{hash: key, opts: o.fingerprint()}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[cacheKey]*cacheEntry{}
	}
	e, ok := c.m[k]
	if !ok {
		max := c.Max
		if max <= 0 {
			max = 4096
		}
		for old := range c.m {
			if len(c.m) < max {
				break
			}
			delete(c.m, old)
		}
		e = &cacheEntry{}
		c.m[k] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.s, e.err = Compile(inputSchema, o) })
	return e.s, e.err
}

// fingerprint spells the options that change a compiled schema, one spelling per
// value; "" for none.
func (o *Options) fingerprint() string {
	if o == nil || (len(o.Clamp) == 0 && len(o.Open) == 0 && o.Limits == nil) {
		return ""
	}
	var b strings.Builder
	ptrs := make([]string, 0, len(o.Clamp))
	for p := range o.Clamp {
		ptrs = append(ptrs, p)
	}
	slices.Sort(ptrs)
	bound := func(f *float64) {
		if f == nil {
			b.WriteString("-")
		} else {
			b.WriteString(strconv.FormatUint(math.Float64bits(*f), 16))
		}
	}
	for _, p := range ptrs {
		r := o.Clamp[p]
		b.WriteString("c" + strconv.Quote(p))
		bound(r.Min)
		b.WriteByte(',')
		bound(r.Max)
	}
	open := slices.Clone(o.Open)
	slices.Sort(open)
	for _, p := range open {
		b.WriteString("o" + strconv.Quote(p))
	}
	if l := o.Limits; l != nil {
		b.WriteString("l" + strconv.Itoa(l.MaxBytes) + "," + strconv.Itoa(l.MaxDepth) + "," + strconv.Itoa(l.MaxElements) + "," + strconv.Itoa(l.MaxStringBytes))
	}
	return b.String()
}
