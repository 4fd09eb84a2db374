// Package chainstore compares storage for the decision chain: append-only
// segment files (package chain's Log) against SQLite (modernc.org/sqlite,
// pure Go), both with group commit and fsync, under concurrent appenders.
// Raw fsync figures from the same run give the disk's reference.
//
//	cd bench && go test -run='^$' -bench=. -benchtime=3s ./chainstore
package chainstore
