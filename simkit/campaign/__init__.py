"""simkit.campaign: many fuzz chunks on a Dask cluster (a LocalCluster by default),
with seeds from one campaign seed, deduplicated findings, behaviour coverage, a
dashboard, and mutation analysis (docs/campaigns.md). It uses fuzz/ and report/;
nothing below it imports it.
"""

from simkit.campaign.cluster import connect
from simkit.campaign.driver import Campaign, Plan, run_campaign
from simkit.campaign.mutation import load_mutants

__all__ = ["Campaign", "Plan", "connect", "load_mutants", "run_campaign"]
