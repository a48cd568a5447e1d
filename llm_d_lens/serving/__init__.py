"""What a server holds between requests: the inventories of unchanged snapshots (:mod:`.inventories`),
live clusters kept current by a watch (:mod:`.watch`, :mod:`.watched`) started and stopped with the app
(:mod:`.lifespan`), whether the server is whole (:mod:`.readiness`), and the routes that answer from
them (:mod:`.api`). Serving floor: above the domains, whose services it calls, below the assembly.
"""
