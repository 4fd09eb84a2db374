package dlp

// atColon handles a ':' at i: the "://" of a URL, or the colon of a "key: value" entry.
func (sc *scanner) atColon(i int) int {
	s := sc.s
	switch {
	case has(s, i, "://"):
		sc.url(i, i+3, false)
		return i + 3
	case has(s, i, `:\/\/`): // a URL in JSON text whose encoder escaped its slashes
		sc.url(i, i+5, false)
		return i + 5
	}
	sc.atAssign(i)
	return i + 1
}

// atPercent handles a '%' at i: the "%3A%2F%2F" of a URL that is itself percent-encoded,
// as in a redirect= query parameter.
func (sc *scanner) atPercent(i int) {
	if hasFold(sc.s, i, "%3a%2f%2f") {
		sc.url(i, i+9, true)
	}
}

// url reports the password in the user information of the URL whose scheme ends at
// colon and whose authority starts at auth: scheme://user:password@host. The authority
// ends at the first '/', '?', '#', ';', space, quote or angle bracket; its last '@'
// ends the user information, whose first ':' starts the password. With enc, the URL is
// percent-encoded: %2F, %3F, %23 and '&' also end the authority, and %40 and %3A are
// the '@' and ':'.
func (sc *scanner) url(colon, auth int, enc bool) {
	s := sc.s
	a := colon
	for a > 0 && colon-a < 32 && (is(s[a-1], cAlnum) || s[a-1] == '+' || s[a-1] == '.' || s[a-1] == '-') {
		a--
	}
	if a == colon || !is(s[a], cUpper|cLower) {
		return
	}
	at := -1
	e := auth
authority:
	for ; e < len(s); e++ {
		c := s[e]
		if urlStop[c] {
			break
		}
		switch {
		case !enc:
			if c == '@' {
				at = e
			}
		case c == '&', c == '%' && (hasFold(s, e, "%2f") || hasFold(s, e, "%3f") || hasFold(s, e, "%23")):
			break authority
		case hasFold(s, e, "%40"):
			at = e
		}
	}
	if at < 0 || at+1 >= e {
		return
	}
	userColon := -1
	for k := auth; k < at; k++ {
		if s[k] == ':' || enc && hasFold(s, k, "%3a") {
			userColon = k
			break
		}
	}
	if userColon < 0 {
		return
	}
	pass := userColon + 1
	if enc && s[userColon] == '%' {
		pass = userColon + 3
	}
	if pass >= at || placeholderValue(s[pass:at]) {
		return
	}
	k := URLPassword
	if connScheme(s[a:colon]) {
		k = ConnPassword
	}
	sc.add(k, pass, at)
}

var urlStop = func() (t [256]bool) {
	for _, c := range []byte("/?#; \t\r\n\"'`<>\\") {
		t[c] = true
	}
	return t
}()

// connScheme reports whether a URL scheme names a database, cache or message broker,
// whose URLs are connection strings.
func connScheme(scheme string) bool {
	var buf [32]byte
	n := copy(buf[:], scheme)
	for k := range n {
		buf[k] = lower(buf[k])
	}
	switch string(buf[:n]) {
	case "postgres", "postgresql", "mysql", "mysqlx", "mariadb", "mongodb", "mongodb+srv",
		"redis", "rediss", "valkey", "amqp", "amqps", "mssql", "sqlserver", "oracle",
		"clickhouse", "cockroachdb", "couchbase", "couchbases", "cassandra", "neo4j",
		"neo4j+s", "bolt", "memcached", "nats", "kafka", "db2", "snowflake", "redshift",
		"sqlite", "jdbc", "odbc", "ldap", "ldaps":
		return true
	}
	return false
}
