// Package session owns what aegis remembers about a session between its calls, for the
// checks that need memory: the ids the server returned (provenance, DESIGN.md R16),
// how often each tool was called (caps, R18), and who started the session and whether
// untrusted content has reached it (origin and taint, R19). The state lives in memory,
// in a [Store] that is safe for concurrent use and bounded in every dimension.
//
// It leaves the rest to others: the configuration says which tools are capped and
// untrusted and which result fields hold ids of which kind, the gateway extracts ids
// (with [IDs]) and asks, and the policy decides what a tainted session may do.
//
// # Failing closed
//
// The store forgets: an idle session expires, and when the table is full the least
// recently used session is evicted. A forgotten session fails closed. [Store.Check]
// finds no ids in it. [Store.State] reports it tainted, of unknown origin, so a rule
// that matches an origin grants it nothing. A write to it ([Store.Record],
// [Store.Take], [Store.Taint]) starts it again in that same tainted state; only
// [Store.Open], which the transport calls when it starts a session, starts a clean one.
//
// One thing does restart: a forgotten session's caps count from zero. That is not a
// way around them for the model. The model cannot open sessions, name the session or
// the turn of a call, or make the store evict a session: the store grows only by the
// id kinds and capped tools the gateway passes, which come from the configuration,
// and past Options it refuses (a kind is not recorded, a tool is refused with
// [Capacity]) rather than evict; the only thing it evicts within a session is its
// oldest ids, which makes [Store.Check] stricter. A session in use is never idle.
// What evicts a busy session is other sessions, opened by clients, and the session
// then comes back tainted, of unknown origin and with no ids: it loses more than the
// count gains.
//
// # Example
//
//	st := session.New(nil)
//	st.Open("s1", capability.Interactive)
//	st.Record("s1", "mail.message", session.IDs(nil, idsPointer, result))
//	if ok, why := st.Check("s1", "mail.message", session.IDs(nil, argPointer, arguments)); !ok {
//		return deny(why)
//	}
//	if ok, c := st.Take("s1", turn, "send_mail", session.Limits{PerTurn: 5}); !ok {
//		return deny("cap " + c.String())
//	}
package session
