// Package membudget accounts the Go-side Arrow buffers of a process
// against one memory budget, per process and per query.
//
// A Budget is the process's share for Arrow buffers allocated in Go
// (batches pulled from peers, results waiting for a slow client, scans
// decoded ahead, ingest). Each fragment or statement takes an Account for
// its query id; the Account is a memory.Allocator that counts every byte
// it hands out, toward its query's total and the process's. Allocation
// never fails (an allocator cannot return an error, and a panic inside a
// library's goroutine would end the process): the code that holds
// buffers asks Account.Err at its bounded queues, between batches, and
// ends its query with ErrExhausted, naming the limit's config key and the
// query id, once either total is past its limit.
package membudget
