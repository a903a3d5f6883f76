// Package iprange allocates single addresses out of an inclusive range of
// IPv4 or IPv6 addresses.
//
// A range never enumerates its addresses: it keeps only the intervals that are
// in use, so a /8 or a /64 costs a few words of memory until addresses are
// handed out, and memory grows with what is allocated, not with the size of
// the range. New allocations always take the lowest free address.
//
// The package does no I/O and holds no locks; callers serialise access.
package iprange
