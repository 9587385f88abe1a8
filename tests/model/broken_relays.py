BROKEN = []
