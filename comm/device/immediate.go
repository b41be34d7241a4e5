package device

// Immediate is an optional interface of a [Device] that can tell, as it
// takes a message, that it has sent it already: an eager message written
// out inside the call. The engine tries SendNow first and, when it
// reports true, completes the send at once, with no completion callback
// to allocate and call; false (with a nil error) means nothing was taken
// and the engine calls Send. SendNow keeps Send's order: the messages of
// one sender to one destination leave in the order of the calls, of
// either method. Its errors are Send's.
type Immediate interface {
	SendNow(src, dst int, env Envelope, data []byte) (bool, error)
}
