"""Decision-level GRPO of the crewmate inside the sim (docs/rl.md): mau.train for the model side, mau.replay
for the rewards."""
