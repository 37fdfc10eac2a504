"""Pure logic: states, hierarchy rules, ranking and review rules. Standard library only."""
