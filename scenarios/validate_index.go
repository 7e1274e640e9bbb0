package scenarios

// topoIndex is the topology's devices and the timeline's step names, built
// once: steps and assertions look them up one by one, and a scenario may
// hold thousands of each (a loop over the topology per step is quadratic).
type topoIndex struct {
	devNames map[string]bool  // device names, any netns
	rxQueues map[string]int   // queues(): the first NIC of that name, else the first veth end
	vethTx   map[string]int   // "netns/name" of a veth end -> the first such veth's queues
	steps    map[string]int   // steps of each name, parallel branches included
	named    map[string]*Step // the last step of each name, as StepNames
	order    map[string]int   // the timeline position of each named step (a parallel branch: its parent's)
}

// index builds the index on first use (after the topology is checked).
func (k *checker) index() *topoIndex {
	if k.idx != nil {
		return k.idx
	}
	x := &topoIndex{devNames: map[string]bool{}, rxQueues: map[string]int{}, vethTx: map[string]int{},
		steps: map[string]int{}, named: map[string]*Step{}, order: map[string]int{}}
	for key := range k.devs {
		_, name := splitDevKey(key)
		x.devNames[name] = true
	}
	for _, n := range k.s.Topology.NICs {
		if _, ok := x.rxQueues[n.Name]; !ok {
			x.rxQueues[n.Name] = n.Queues
		}
	}
	for _, v := range k.s.Topology.Veths {
		for _, e := range []End{v.End, v.Peer} {
			if _, ok := x.rxQueues[e.Name]; !ok {
				x.rxQueues[e.Name] = max(v.Queues, 1)
			}
			if _, ok := x.vethTx[e.Netns+"/"+e.Name]; !ok {
				x.vethTx[e.Netns+"/"+e.Name] = v.Queues
			}
		}
	}
	eachStep(k.s.Timeline, func(st *Step) {
		if st.Name != "" {
			x.steps[st.Name]++
			x.named[st.Name] = st
		}
	})
	for i, top := range k.s.Timeline {
		eachStep([]*Step{top}, func(st *Step) {
			if st.Name != "" {
				x.order[st.Name] = i
			}
		})
	}
	k.idx = x
	return x
}

// splitDevKey splits a k.devs key, "netns/name".
func splitDevKey(key string) (netns, name string) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}
