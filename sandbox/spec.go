package sandbox

import "github.com/litterbox-dev/litterbox/docker"

// ContainerSpec is the container Create starts for sandbox slug of r at commit base.
// It is exported for the benchmark (bench/), whose floor must run the very
// same `docker run` as Create so the two stay in step.
func (s *Service) ContainerSpec(r *Repo, slug, base string) docker.RunSpec {
	return s.runSpec(r, slug, base)
}
