"""The workload profile: a versioned, validated, human-readable description of a workload."""

from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.schema import FileType, NamespaceShape, OpMix, ProfileSource, WorkloadProfile

__all__ = ["Distribution", "FileType", "NamespaceShape", "OpMix", "ProfileSource", "WorkloadProfile"]
