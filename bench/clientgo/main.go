// Command clientgo-baseline is the client-go peer of pyctrl's controller benchmark: a
// dynamic shared informer on BenchItems and a workqueue with one worker, whose reconcile
// writes status.observed = spec.value through the status subresource when they differ
// (the work bench/operators.py's operators do). It runs until SIGTERM; the benchmark's
// driver times it from outside, as it times the Python operators.
//
// Built in GOPATH mode from Debian's client-go sources (bench/clientgo_build.py).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig")
	group := flag.String("group", "bench.pyctrl.dev", "group")
	version := flag.String("version", "v1", "version")
	resource := flag.String("resource", "benchitems", "plural")
	namespace := flag.String("namespace", "default", "namespace")
	flag.Parse()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		panic(err)
	}
	config.QPS, config.Burst = -1, 0 // as pyctrl: no client-side rate limit
	client := dynamic.NewForConfigOrDie(config)
	gvr := schema.GroupVersionResource{Group: *group, Version: *version, Resource: *resource}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, *namespace, nil)
	informer := factory.ForResource(gvr).Informer()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj interface{}) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)
	go func() {
		for {
			key, quit := queue.Get()
			if quit {
				return
			}
			obj, exists, err := informer.GetStore().GetByKey(key)
			if err == nil && exists {
				u := obj.(*unstructured.Unstructured)
				value, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "value")
				observed, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "observed")
				if !found || fmt.Sprint(observed) != fmt.Sprint(value) {
					patched := u.DeepCopy()
					unstructured.SetNestedField(patched.Object, value, "status", "observed")
					_, err = client.Resource(gvr).Namespace(u.GetNamespace()).UpdateStatus(ctx, patched, metav1.UpdateOptions{})
				}
			}
			if err != nil {
				queue.AddRateLimited(key)
			} else {
				queue.Forget(key)
			}
			queue.Done(key)
		}
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	queue.ShutDown()
}
