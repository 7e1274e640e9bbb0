topology:
  netns: [peer]
  veths:
    - name: vrx
      gro: yes please
      peer: {name: vtx, netns: peer, adress: 10.0.0.1/24}
