package policy

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestActionMemo holds the memo of action candidates to the reference
// while it fills, evicts and is read by several goroutines at once:
// more (server, tool) pairs than slots, names of every length around the
// 16 bytes its words decide, and pairs that differ only past them.
func TestActionMemo(t *testing.T) {
	servers := []string{"fs", "git", "fetch", "db", "", "f", "browser", "legacy", "slack", "mail",
		"a-server-of-16ch", "a-server-of-17chx", "a-server-of-17chy", "fs\x00", "FS"}
	tools := []string{"read_file", "read_", "read", "write_file", "git_push", "git_status", "fetch", "query", "admin_users",
		"delete_x", "drop_table", "list_events", "navigate", "post_message", "", "t",
		"a-tool-name-of-16", "a-tool-name-of-17a", "a-tool-name-of-17b", "list_directory_a_long_name_1", "list_directory_a_long_name_2"}
	for i := range 40 {
		tools = append(tools, fmt.Sprintf("generated_tool_%d", i))
	}
	for _, name := range []string{"bench_1100.yaml", "matchers.yaml", "shadow.yaml"} {
		s := fixture(t, name)
		var wg sync.WaitGroup
		errs := make(chan string, 4)
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for round := range 3 {
					for i, server := range servers {
						for j, tool := range tools {
							r := benchRequest()
							r.Server, r.Tool, r.Caps = server, tool, nil
							r.Roles = [][]string{nil, {"dev"}, {"analyst", "ops"}}[(i+j+g+round)%3]
							r.Principal = []string{"alice", "dba"}[(i+j)%2]
							got, want := outcomeOf(s.Decide(r)), referenceDecide(s, r)
							if diff := cmp.Diff(want, got); diff != "" {
								select {
								case errs <- fmt.Sprintf("%s: server %q tool %q: Decide differs from the reference (-want +got)\n%s", name, server, tool, diff):
								default:
								}
								return
							}
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}
}

// TestActionMemoCollision fills the memo past its slots, so that pairs
// evict others, and decides two pairs that were stored in one slot in
// turn: neither is answered for the other.
func TestActionMemoCollision(t *testing.T) {
	s := fixture(t, "bench_1100.yaml")
	memo := s.idx.memo
	slotOf := func(server, tool string) int {
		memo.candidates(&s.idx, server, tool)
		for i := range memo.slots {
			if e := memo.slots[i].Load(); e != nil && e.server == server && e.tool == tool {
				return i
			}
		}
		t.Fatalf("pair (%q, %q) was not remembered", server, tool)
		return -1
	}
	// Two tools of server fs whose pairs share a slot.
	var a, b string
	bySlot := map[int]string{}
	for i := 0; a == "" && i < 100*memoSlots; i++ {
		tool := fmt.Sprintf("read_%d", i)
		k := slotOf("fs", tool)
		if prev, ok := bySlot[k]; ok {
			a, b = prev, tool
		}
		bySlot[k] = tool
	}
	if a == "" {
		t.Fatal("no two pairs share a slot")
	}
	for i := range 6 {
		for _, tc := range []struct{ server, tool, want string }{
			{"fs", a, "fs-read"}, {"fs", b, "fs-read"}, {"git", a, ""}, {"fs", "write_file", "fs-write"}, {"fs", "delete_" + a, "no-delete"},
		} {
			r := benchRequest()
			r.Server, r.Tool, r.Caps = tc.server, tc.tool, nil
			if got := outcomeOf(s.Decide(r)).Action; got != tc.want {
				t.Errorf("round %d: server %q tool %q decided by %q, want %q", i, tc.server, tc.tool, got, tc.want)
			}
		}
	}
}

// TestActionMemoLongNames decides names of more than 16 bytes that share
// their first and last eight, which the memo's words do not tell apart.
func TestActionMemoLongNames(t *testing.T) {
	s, err := Parse("long.yaml", []byte(`version: 1
rules:
  - {id: tool-x, effect: allow, tool: abcdefghXijklmnop}
  - {id: tool-y, effect: ask, tool: abcdefghYijklmnop}
  - {id: server-x, effect: allow, server: "servers-X-servers", tool: t}
  - {id: server-y, effect: ask, server: "servers-Y-servers", tool: t}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		for _, tc := range []struct{ server, tool, want string }{
			{"s", "abcdefghXijklmnop", "tool-x"}, {"s", "abcdefghYijklmnop", "tool-y"}, {"s", "abcdefghZijklmnop", ""},
			{"servers-X-servers", "t", "server-x"}, {"servers-Y-servers", "t", "server-y"}, {"servers-Z-servers", "t", ""},
		} {
			r := &Request{Server: tc.server, Tool: tc.tool, Bound: true}
			if got := outcomeOf(s.Decide(r)).Action; got != tc.want {
				t.Errorf("round %d: server %q tool %q decided by %q, want %q", i, tc.server, tc.tool, got, tc.want)
			}
		}
	}
}

// TestActionMemoKeeps decides 40 pairs in turn, as a gateway whose
// servers offer 40 tools would: once each is remembered, no call builds
// an entry again (a memo where colliding pairs evicted each other would
// allocate on most rounds).
func TestActionMemoKeeps(t *testing.T) {
	s, err := Parse("keeps.yaml", mustRead(t, "bench_1100.yaml"), &Options{Home: testHome})
	if err != nil {
		t.Fatal(err)
	}
	var reqs []*Request
	for i := range 40 {
		r := benchRequest()
		r.Server, r.Tool, r.Caps = []string{"fs", "git", "mail", "db"}[i%4], fmt.Sprintf("tool_%d", i), nil
		reqs = append(reqs, r)
	}
	for _, r := range reqs {
		s.Decide(r)
	}
	if n := testing.AllocsPerRun(20, func() {
		for _, r := range reqs {
			s.Decide(r)
		}
	}); n != 0 {
		t.Errorf("deciding 40 remembered pairs allocates %v times a round, want 0", n)
	}
}
