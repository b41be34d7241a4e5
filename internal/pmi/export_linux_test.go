package pmi

// LocalRendezvous is localRendezvous, for the tests of package pmi_test.
var LocalRendezvous = localRendezvous
