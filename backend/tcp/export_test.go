package tcp

// SpinFor is spin: Config.Spin as the transport takes it, on a node that
// runs onNode processes of the job.
var SpinFor = spin
