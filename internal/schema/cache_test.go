package schema

import (
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
)

func TestCache(t *testing.T) {
	var c Cache
	good := []byte(`{"properties":{"limit":{"type":"integer"}}}`)
	bad := []byte(`{"properties":{"x":{"$ref":"https://evil.example/s.json"}}}`)
	kg, kb := sha256.Sum256(good), sha256.Sum256(bad)

	var wg sync.WaitGroup
	got := make([]*Schema, 8)
	for i := range got {
		wg.Go(func() {
			s, err := c.Schema(kg, good, nil)
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		})
	}
	wg.Wait()
	for _, s := range got[1:] {
		if s != got[0] {
			t.Fatal("concurrent callers got different compilations of one key")
		}
	}

	// Options are part of the key, by value.
	o1 := &Options{Clamp: map[string]Range{"/limit": Ceiling(10)}}
	o2 := &Options{Clamp: map[string]Range{"/limit": Ceiling(10)}}
	o3 := &Options{Clamp: map[string]Range{"/limit": Ceiling(20)}}
	s1, _ := c.Schema(kg, good, o1)
	s2, _ := c.Schema(kg, good, o2)
	s3, _ := c.Schema(kg, good, o3)
	if s1 == got[0] || s1 != s2 || s1 == s3 {
		t.Error("options do not key the cache by value")
	}
	if out, _, _ := s3.Check([]byte(`{"limit":15}`)); out != nil {
		t.Errorf("the ceiling 20 schema clamped 15: %s", out)
	}

	// A compile error is cached and keeps denying.
	_, err1 := c.Schema(kb, bad, nil)
	_, err2 := c.Schema(kb, bad, nil)
	if !errors.Is(err1, ErrCompile) || err1 != err2 {
		t.Errorf("compile error not cached: %v, %v", err1, err2)
	}
}

func TestCacheBounded(t *testing.T) {
	c := Cache{Max: 3}
	for i := range 10 {
		sch := []byte(`{"properties":{"a` + string(rune('a'+i)) + `":{}}}`)
		if _, err := c.Schema(sha256.Sum256(sch), sch, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.m); n > 3 {
		t.Errorf("cache holds %d entries, over Max 3", n)
	}
}
