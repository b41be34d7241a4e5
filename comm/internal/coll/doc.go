// Package coll holds the point-to-point collective algorithms of package
// comm and the one table that chooses among all of comm's collective
// algorithms.
//
// The algorithms (binomial trees, recursive doubling and halving, ring,
// Bruck, Rabenseifner's, van de Geijn's, pairwise exchange, dissemination)
// are methods of [Call], one rank's side of a collective in progress. A
// Call talks to the other ranks through a [Peer], a small interface over
// tagged byte messages that package comm implements over a communicator's
// collective context and that tests implement with channels, so that every
// algorithm runs, and fails, without a world. The failure machinery (a
// mismatch poisons the rest of the call's messages, so that every rank that
// depends on it fails too and none waits forever) belongs to Call, so it
// is the same under both.
//
// [Select] is the choice of algorithm: collective × form × message size ×
// rank count × placement of the members × pinned setting, with every
// threshold in select.go. The shared-memory and two-level algorithms stay
// in package comm (they need the engine's shared memory); Select chooses
// them too.
//
// The errors a Call makes speak as package comm ("comm: …"), which returns
// them to its users, and wrap the sentinels the Call was given ([Errors]).
package coll
