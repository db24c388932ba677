// kubeadm from the same k8s.io/kubernetes release as the lab's kube-apiserver: the tests
// validate every kubeadm configuration the collection renders with `kubeadm config validate`.
package main

import (
	"k8s.io/kubernetes/cmd/kubeadm/app"
	utilerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
)

func main() { utilerrors.HandleError(app.Run()) }
