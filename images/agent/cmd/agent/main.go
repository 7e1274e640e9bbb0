// Command agent is napilab's guest agent, the /init of every lab initramfs
// (images.AgentPackage); package agent holds what it does.
package main

import "napilab/images/agent"

func main() { agent.Init() }
