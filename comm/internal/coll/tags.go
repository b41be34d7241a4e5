package coll

// Tags of the algorithms' messages on the collective context. The range
// 100–199 belongs to the collectives: package comm's machinery uses 100–102
// and 160–169; the algorithms here use the rest. One tag per algorithm step
// lets a receiver see that its peer runs another collective or algorithm.
const (
	tagDissem      = 103
	tagAgree       = 104 // Agree's rounds
	tagBcastBinom  = 110
	tagBcastSAG    = 111 // scatter phase; the ring uses tagBcastRing
	tagBcastRing   = 112
	tagBcastFlat   = 113
	tagReduceBinom = 120
	tagReduceHop   = 121 // from rank 0 to the root
	tagReduceFlat  = 122
	tagRedFold     = 123 // non-power-of-two fold and unfold
	tagRedRD       = 124
	tagRedHalving  = 125
	tagRedDoubling = 126
	tagRedToRoot   = 127
	tagRedPermute  = 128
	tagGatherFlat  = 130
	tagGatherBinom = 131
	tagScatFlat    = 132
	tagScatBinom   = 133
	tagAllgRing    = 140
	tagAllgBruck   = 141
	tagA2APair     = 142
	tagA2ABruck    = 143
	tagScan        = 150
	tagExscan      = 151
	tagPoison      = 190 // 190–193: poison, by the class of the failure (Call.poisonTag)
)
